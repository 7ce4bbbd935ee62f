// L-BFGS against PyTorch's algorithm written out in plain doubles (no line
// search), the strong Wolfe line search on Rosenbrock's function, its state
// and its bad uses (on CUDA: tests/nn/cuda/test_cuda_optimizers.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "nn/optim/lbfgs.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

double dotv(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
double max_absv(const Vec& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

// torch.optim.LBFGS.step without line search, for a function that fills its gradient.
struct RefLBFGS {
  double lr;
  int max_iter, history;
  std::function<double(const Vec&, Vec&)> f;
  double tol_grad = 1e-7, tol_change = 1e-9;
  int n_iter = 0, func_evals = 0;
  Vec d, prev_g;
  double t = 0, h_diag = 1, prev_loss = 0;
  std::vector<Vec> dirs, stps;
  std::vector<double> ro;

  void step(Vec& x) {
    const int max_eval = max_iter * 5 / 4;
    Vec g;
    double loss = f(x, g);
    ++func_evals;
    int evals = 1;
    if (max_absv(g) <= tol_grad) return;
    for (int n = 1; n <= max_iter; ++n) {
      ++n_iter;
      const size_t m = x.size();
      if (n_iter == 1) {
        d.assign(m, 0);
        for (size_t i = 0; i < m; ++i) d[i] = -g[i];
        dirs.clear(), stps.clear(), ro.clear();
        h_diag = 1;
      } else {
        Vec y(m), s(m);
        for (size_t i = 0; i < m; ++i) y[i] = g[i] - prev_g[i], s[i] = d[i] * t;
        const double ys = dotv(y, s);
        if (ys > 1e-10) {
          if (static_cast<int>(dirs.size()) == history)
            dirs.erase(dirs.begin()), stps.erase(stps.begin()), ro.erase(ro.begin());
          dirs.push_back(y), stps.push_back(s), ro.push_back(1 / ys);
          h_diag = ys / dotv(y, y);
        }
        const size_t k = dirs.size();
        Vec al(k), q(m);
        for (size_t i = 0; i < m; ++i) q[i] = -g[i];
        for (size_t j = k; j-- > 0;) {
          al[j] = dotv(stps[j], q) * ro[j];
          for (size_t i = 0; i < m; ++i) q[i] -= al[j] * dirs[j][i];
        }
        for (size_t i = 0; i < m; ++i) d[i] = q[i] * h_diag;
        for (size_t j = 0; j < k; ++j) {
          const double be = dotv(dirs[j], d) * ro[j];
          for (size_t i = 0; i < m; ++i) d[i] += (al[j] - be) * stps[j][i];
        }
      }
      prev_g = g;
      prev_loss = loss;
      double l1 = 0;
      for (double v : g) l1 += std::abs(v);
      t = n_iter == 1 ? std::min(1.0, 1.0 / l1) * lr : lr;
      if (dotv(g, d) > -tol_change) break;
      for (size_t i = 0; i < m; ++i) x[i] += t * d[i];
      int ls = 0;
      if (n != max_iter) loss = f(x, g), ls = 1;
      evals += ls, func_evals += ls;
      if (n == max_iter || evals >= max_eval || max_absv(g) <= tol_grad) break;
      if (max_absv(d) * std::abs(t) <= tol_change || std::abs(loss - prev_loss) < tol_change) break;
    }
  }
};

TEST(LBFGS, MatchesPyTorchsAlgorithmWithoutLineSearch) {
  manual_seed(31);
  // f(x) = 0.5 |A x - b|^2 + 0.1 sum x^4: not quadratic, so the history matters.
  const Tensor a = randn({6, 5}, kFloat64), b = randn({6}, kFloat64);
  Tensor x = randn({5}, kFloat64).requires_grad_(true);
  const Vec av = values(a), bv = values(b);
  auto f = [&](const Vec& xv, Vec& g) {
    Vec r(6, 0.0);
    double loss = 0;
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 5; ++j) r[i] += av[i * 5 + j] * xv[j];
      r[i] -= bv[i];
      loss += 0.5 * r[i] * r[i];
    }
    g.assign(5, 0.0);
    for (int j = 0; j < 5; ++j) {
      for (int i = 0; i < 6; ++i) g[j] += av[i * 5 + j] * r[i];
      g[j] += 0.4 * std::pow(xv[j], 3);
      loss += 0.1 * std::pow(xv[j], 4);
    }
    return loss;
  };
  LBFGS opt({x}, LBFGSOptions(0.5).max_iter(4).history_size(3));
  RefLBFGS ref{0.5, 4, 3, f};
  Vec xr = values(x);
  int closure_calls = 0;
  auto closure = [&] {
    ++closure_calls;
    opt.zero_grad();
    Tensor r = matmul(a, x) - b;
    Tensor loss = (r * r).sum() * 0.5 + (x * x * x * x).sum() * 0.1;
    loss.backward();
    return loss;
  };
  for (int s = 0; s < 4; ++s) {
    Vec g0;
    const double expected_loss = f(xr, g0);
    const Tensor loss = opt.step(closure);
    EXPECT_NEAR(loss.item<double>(), expected_loss, 1e-12) << "step returns the first closure's loss";
    ref.step(xr);
    expect_near(values(x), xr, 1e-10, "x");
  }
  const ParamState* st = opt.state_of(x);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->scalars.at("n_iter"), ref.n_iter);
  EXPECT_EQ(st->scalars.at("func_evals"), ref.func_evals);
  EXPECT_EQ(closure_calls, ref.func_evals);
  EXPECT_EQ(st->scalars.at("history"), 3.0);  // history_size caps the pairs kept
}

// Rosenbrock's function, minimum 0 at (1, 1).
Tensor rosenbrock(const Tensor& xy) {
  Tensor x = xy.slice(0, 0, 1), y = xy.slice(0, 1, 2);
  Tensor t = y - x * x;
  Tensor u = 1.0 - x;
  return (t * t * 100.0 + u * u).sum();
}

TEST(LBFGS, StrongWolfeLineSearchSolvesRosenbrock) {
  Tensor xy = from_vector(std::vector<double>{-1.5, 2.0}, {2}, kFloat64).requires_grad_(true);
  LBFGS opt({xy}, LBFGSOptions(1).line_search_fn("strong_wolfe").max_iter(50));
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = rosenbrock(xy);
    loss.backward();
    return loss;
  };
  double loss = 0;
  for (int s = 0; s < 5; ++s) loss = opt.step(closure).item<double>();
  loss = rosenbrock(xy.detach()).item<double>();
  // From 4.3 down to where tolerance_change (1e-9 per iteration) stops it, as PyTorch's.
  EXPECT_LT(loss, 1e-8);
  expect_near(values(xy), {1.0, 1.0}, 1e-4, "xy");
}

TEST(LBFGS, StateRoundTripsAndResumesIdentically) {
  manual_seed(5);
  const Tensor target = randn({3, 2}, kFloat64);
  auto make_closure = [&](LBFGS& opt, Tensor& w) {
    return [&opt, &w, &target] {
      opt.zero_grad();
      Tensor d = w - target;
      Tensor loss = (d * d * d * d).sum() + (d * d).sum();
      loss.backward();
      return loss;
    };
  };
  Tensor w = random_param({3, 2});
  LBFGS opt({w}, LBFGSOptions(0.3).max_iter(3).history_size(4));
  auto closure = make_closure(opt, w);
  opt.step(closure), opt.step(closure);
  Tensor w2 = copy_param(w);
  LBFGS resumed({w2}, LBFGSOptions(0.3).max_iter(3).history_size(4));
  resumed.load_state_dict(unflatten(flatten(opt.state_dict())));
  auto closure2 = make_closure(resumed, w2);
  opt.step(closure), resumed.step(closure2);
  expect_equal(w, w2);
}

TEST(LBFGS, BadUsesGiveClearErrors) {
  Tensor a = random_param({2}), b = random_param({2});
  LBFGS opt({a});
  try {
    opt.step();
    ADD_FAILURE() << "step() without a closure must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("call step(closure)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LBFGS({LBFGS::Group{{a}}, LBFGS::Group{{b}}}), Error);  // one group only, as PyTorch
  EXPECT_THROW(LBFGS({b}, LBFGSOptions().line_search_fn("backtracking")), Error);
  EXPECT_THROW(LBFGS({b}, LBFGSOptions().history_size(0)), Error);
}

}  // namespace
}  // namespace anvil::nn::optim::test
