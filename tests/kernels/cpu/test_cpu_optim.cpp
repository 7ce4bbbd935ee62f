// CPU optimizer updates against the textbook formulas (PyTorch's
// documentation), over several steps and several tensors at once.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

template <typename T> struct AdamState {
  TestTensor<T> p, g, m, v;
  std::vector<double> rp, rm, rv;  // reference, in double
};

template <typename T> void run_adam(bool decoupled, double tol) {
  std::mt19937 rng(60);
  AdamWParams hp;
  hp.lr = 0.01;
  hp.beta1 = 0.85;
  hp.beta2 = 0.99;
  hp.eps = 1e-6;
  hp.weight_decay = 0.1;
  hp.decoupled = decoupled;
  std::vector<AdamState<T>> tensors;
  for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{100003}}) {  // the last one is threaded
    AdamState<T> s{random_tensor<T>({n}, rng),
                   filled_tensor<T>({n}, 0.0),
                   filled_tensor<T>({n}, 0.0),
                   filled_tensor<T>({n}, 0.0),
                   {},
                   {},
                   {}};
    s.rp.assign(s.p.storage.begin(), s.p.storage.end());
    s.rm.assign(n, 0.0);
    s.rv.assign(n, 0.0);
    tensors.push_back(std::move(s));
  }
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<View> p, g, m, v;
    for (auto& s : tensors) {
      for (auto& x : s.g.storage) x = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(rng));
      p.push_back(s.p.view);
      g.push_back(s.g.view);
      m.push_back(s.m.view);
      v.push_back(s.v.view);
      for (size_t i = 0; i < s.rp.size(); ++i) {
        double grad = s.g.storage[i], param = s.rp[i];
        if (decoupled)
          param -= hp.lr * hp.weight_decay * param;
        else
          grad += hp.weight_decay * param;
        s.rm[i] = hp.beta1 * s.rm[i] + (1 - hp.beta1) * grad;
        s.rv[i] = hp.beta2 * s.rv[i] + (1 - hp.beta2) * grad * grad;
        const double mhat = s.rm[i] / (1 - std::pow(hp.beta1, step));
        const double vhat = s.rv[i] / (1 - std::pow(hp.beta2, step));
        s.rp[i] = param - hp.lr * mhat / (std::sqrt(vhat) + hp.eps);
      }
    }
    hp.step = step;
    kernel_for<kernel::AdamW>(DeviceType::CPU)(p, g, m, v, hp);
  }
  for (auto& s : tensors) {
    expect_close(std::vector<double>(s.p.storage.begin(), s.p.storage.end()), s.rp, tol, tol, "params");
    expect_close(std::vector<double>(s.m.storage.begin(), s.m.storage.end()), s.rm, tol, tol, "exp_avg");
    expect_close(std::vector<double>(s.v.storage.begin(), s.v.storage.end()), s.rv, tol, tol, "exp_avg_sq");
  }
}

TEST(CpuOptim, AdamWFloat32) { run_adam<float>(true, 2e-6); }
TEST(CpuOptim, AdamWFloat64) { run_adam<double>(true, 1e-12); }
TEST(CpuOptim, AdamL2Float32) { run_adam<float>(false, 2e-6); }

void run_sgd(SGDParams hp, double tol) {
  std::mt19937 rng(61);
  const bool use_momentum = hp.momentum != 0;
  std::vector<TestTensor<double>> p, g, buf;
  std::vector<std::vector<double>> rp, rbuf;
  for (int64_t n : {int64_t{3}, int64_t{300000}}) {  // the second one is threaded
    p.push_back(random_tensor<double>({n}, rng));
    g.push_back(filled_tensor<double>({n}, 0.0));
    buf.push_back(filled_tensor<double>({n}, 0.0));
    rp.emplace_back(p.back().storage);
    rbuf.emplace_back(n, 0.0);
  }
  for (int step = 0; step < 3; ++step) {
    hp.first_step = step == 0;
    std::vector<View> pv, gv, bv;
    for (size_t k = 0; k < p.size(); ++k) {
      for (auto& x : g[k].storage) x = std::uniform_real_distribution<double>(-1, 1)(rng);
      pv.push_back(p[k].view);
      gv.push_back(g[k].view);
      if (use_momentum) bv.push_back(buf[k].view);
      for (size_t i = 0; i < rp[k].size(); ++i) {
        double d = g[k].storage[i] + hp.weight_decay * rp[k][i];
        if (use_momentum) {
          rbuf[k][i] = step == 0 ? d : hp.momentum * rbuf[k][i] + (1 - hp.dampening) * d;
          d = hp.nesterov ? d + hp.momentum * rbuf[k][i] : rbuf[k][i];
        }
        rp[k][i] -= hp.lr * d;
      }
    }
    kernel_for<kernel::SGD>(DeviceType::CPU)(pv, gv, bv, hp);
  }
  for (size_t k = 0; k < p.size(); ++k) {
    expect_close(p[k].storage, rp[k], tol, tol, "sgd params");
    if (use_momentum) expect_close(buf[k].storage, rbuf[k], tol, tol, "sgd momentum");
  }
}

TEST(CpuOptim, SgdVariants) {
  run_sgd(SGDParams{0.1, 0.0, 0.0, 0.0, false, false}, 1e-14);  // plain
  run_sgd(SGDParams{0.1, 0.0, 0.0, 0.01, false, false}, 1e-14);  // weight decay
  run_sgd(SGDParams{0.05, 0.9, 0.0, 0.0, false, false}, 1e-14);  // momentum
  run_sgd(SGDParams{0.05, 0.9, 0.2, 1e-3, false, false}, 1e-14);  // dampening + decay
  run_sgd(SGDParams{0.05, 0.9, 0.0, 1e-3, true, false}, 1e-14);  // nesterov
}

TEST(CpuOptim, BadListsAndDtypesThrow) {
  auto p = filled_tensor<float>({4}, 1.0);
  auto g = filled_tensor<float>({4}, 1.0);
  auto short_g = filled_tensor<float>({3}, 1.0);
  std::vector<View> ps = {p.view}, gs = {g.view}, none;
  std::string msg =
      error_message([&] { kernel_for<kernel::AdamW>(DeviceType::CPU)(ps, gs, none, none, AdamWParams{}); });
  EXPECT_NE(msg.find("adamw"), std::string::npos) << msg;
  std::vector<View> short_gs = {short_g.view};
  msg = error_message([&] { kernel_for<kernel::SGD>(DeviceType::CPU)(ps, short_gs, none, SGDParams{}); });
  EXPECT_NE(msg.find("sgd"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3"), std::string::npos) << msg;

  auto hp = filled_tensor<Half>({4}, 1.0);
  auto hg = filled_tensor<Half>({4}, 1.0);
  std::vector<View> hps = {hp.view}, hgs = {hg.view};
  msg = error_message([&] { kernel_for<kernel::SGD>(DeviceType::CPU)(hps, hgs, none, SGDParams{}); });
  EXPECT_NE(msg.find("float16"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
