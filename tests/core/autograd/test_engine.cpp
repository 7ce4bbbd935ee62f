// The backward engine: accumulation, shared subgraphs, retain_graph, hooks,
// no_grad, the in-place check, higher-order gradients, checkpointing.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "core/autograd/checkpoint.h"
#include "core/autograd/engine.h"
#include "core/ops.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::max_abs_diff;

TEST(Autograd, LeafGradientsAccumulateAcrossBackwardCalls) {
  Tensor x = randn({3, 4}, kFloat64).requires_grad_();
  (x * x).sum().backward();
  EXPECT_LT(max_abs_diff(x.grad(), x.detach() * 2.0), 1e-12);
  (x * 3.0).sum().backward();
  EXPECT_LT(max_abs_diff(x.grad(), x.detach() * 2.0 + 3.0), 1e-12);
}

TEST(Autograd, SharedSubgraphSumsBothPaths) {
  Tensor x = randn({5}, kFloat64).requires_grad_();
  Tensor h = x.sin();  // used twice below
  Tensor y = (h * h + h * 2.0).sum();  // dy/dx = (2 sin x + 2) cos x
  y.backward();
  Tensor xs = x.detach();
  EXPECT_LT(max_abs_diff(x.grad(), (xs.sin() * 2.0 + 2.0) * xs.cos()), 1e-12);
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = randn({4}, kFloat64).requires_grad_();
  Tensor y = (x.exp() * x).sum();
  y.backward({}, /*retain_graph=*/true);
  Tensor first = x.grad().clone();
  y.backward();
  EXPECT_LT(max_abs_diff(x.grad(), first * 2.0), 1e-12);
  EXPECT_THROW(y.backward(), Error);  // saved tensors are gone now
  try {
    y.backward();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos);
  }
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = randn({3}).requires_grad_();
  Tensor y;
  {
    NoGradGuard guard;
    y = x * 2.0;
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  EXPECT_THROW(y.sum().backward(), Error);
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, DetachCutsHistory) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor y = (x * x.detach()).sum();  // gradient only through the first factor
  y.backward();
  EXPECT_LT(max_abs_diff(x.grad(), x.detach()), 1e-12);
}

TEST(Autograd, TensorHooksSeeAndReplaceGradients) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor seen;
  h.register_hook([&](const Tensor& g) {
    seen = g.clone();
    return g * 10.0;
  });
  h.sum().backward();
  EXPECT_LT(max_abs_diff(seen, ones({3}, kFloat64)), 1e-12);
  EXPECT_LT(max_abs_diff(x.grad(), full({3}, 20.0, kFloat64)), 1e-12);

  Tensor w = randn({2}, kFloat64).requires_grad_();
  int leaf_hook_calls = 0;
  w.register_hook([&](const Tensor& g) {
    ++leaf_hook_calls;
    return Tensor();
  });
  std::vector<double> grad_at_post_hook;
  w.register_post_accumulate_grad_hook(
      [&](const Tensor& leaf) { grad_at_post_hook = leaf.grad().to_vector<double>(); });
  (w * 3.0).sum().backward();
  EXPECT_EQ(leaf_hook_calls, 1);
  EXPECT_EQ(grad_at_post_hook, (std::vector<double>{3.0, 3.0}));
}

TEST(Autograd, RetainGradKeepsNonLeafGradient) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor h = x * 3.0;
  h.retain_grad();
  (h * h).sum().backward();
  EXPECT_LT(max_abs_diff(h.grad(), h.detach() * 2.0), 1e-12);
}

TEST(Autograd, InPlaceChangeOfSavedTensorIsCaught) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor y = h.exp();  // saves its output
  y.mul_(2.0);  // ...which is then changed in place
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified in place"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exp"), std::string::npos) << e.what();
  }
}

TEST(Autograd, InPlaceOnLeafRequiringGradIsRefused) {
  Tensor w = randn({3}).requires_grad_();
  EXPECT_THROW(w.add_(ones({3})), Error);
  {
    NoGradGuard guard;  // the optimizer's way
    w.add_(ones({3}));
  }
}

TEST(Autograd, InPlaceOpsOnNonLeavesKeepCorrectGradients) {
  Tensor x = randn({4}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  h.add_(x);  // h = 3x
  h.mul_(full({4}, 3.0, kFloat64));  // h = 9x
  h.relu_();
  h.sum().backward();
  Tensor expected = mul(gt(x.detach(), 0.0).to(kFloat64), 9.0);
  EXPECT_LT(max_abs_diff(x.grad(), expected), 1e-10);
}

// Only the view would take the history of the write; the tensor it views
// would give a wrong gradient (PyTorch records CopySlices), so it is refused.
TEST(Autograd, InPlaceWriteWithGradIntoViewOfHistorylessTensorIsRefused) {
  Tensor w = randn({2}, kFloat64).requires_grad_();
  auto expect_refused = [&](const char* op, const std::function<void(Tensor&)>& write) {
    Tensor x = randn({4}, kFloat64);
    const std::vector<double> before = x.to_vector<double>();
    const uint64_t version = x.version();
    try {
      write(x);
      FAIL() << op << " should be refused";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(op), std::string::npos) << m;
      EXPECT_NE(m.find("view"), std::string::npos) << m;
      EXPECT_NE(m.find("without autograd history"), std::string::npos) << m;
    }
    EXPECT_EQ(x.to_vector<double>(), before) << op;
    EXPECT_EQ(x.version(), version) << op;
    EXPECT_FALSE(x.requires_grad()) << op;
  };
  expect_refused("mul_", [&](Tensor& x) { x.narrow(0, 1, 2).mul_(w); });
  expect_refused("add_", [&](Tensor& x) { x.slice(0, 0, 4, 2).add_(w); });
  expect_refused("copy_", [&](Tensor& x) { x.select(0, 3).copy_(w.sum()); });
  expect_refused("div_", [&](Tensor& x) { x.view({2, 2}).t().narrow(1, 0, 1).div_(w.unsqueeze(1)); });
  expect_refused("mul_", [&](Tensor& x) { x.t().mul_(w.sum()); });  // t() of 1-D is a view too
}

TEST(Autograd, InPlaceWritesThatKeepGradientsRightStillWork) {
  Tensor w = randn({4}, kFloat64).requires_grad_();
  Tensor x = randn({4}, kFloat64);
  Tensor x0 = x.clone();
  x.add_(w);  // the whole tensor takes the history
  (x * x0).sum().backward();
  EXPECT_LT(max_abs_diff(w.grad(), x0), 1e-12);

  // Views written without an operand that requires grad, or under NoGradGuard.
  Tensor y = zeros({4}, kFloat64);
  y.narrow(0, 1, 2).add_(ones({2}, kFloat64));
  {
    NoGradGuard no_grad;
    y.narrow(0, 2, 2).mul_(w.narrow(0, 0, 2));
  }
  std::vector<double> wv = w.detach().to_vector<double>();
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 1, wv[0], 0}));

  // reshape that had to copy returns a new tensor, not a view: writable.
  Tensor m = randn({3, 4}, kFloat64).t();  // not viewable as [12]
  Tensor flat = m.reshape({-1});
  Tensor u = randn({12}, kFloat64).requires_grad_();
  flat.sub_(u);
  Tensor weights = randn({12}, kFloat64);
  (flat * weights).sum().backward();
  EXPECT_LT(max_abs_diff(u.grad(), -weights), 1e-12);
  EXPECT_LT(max_abs_diff(flat.detach(), m.reshape({-1}) - u.detach()), 1e-12);
}

TEST(Autograd, HigherOrderGradients) {
  Tensor x = randn({5}, kFloat64).requires_grad_();
  Tensor y = (x * x * x).sum();  // dy/dx = 3x^2, d2y/dx2 = 6x
  auto g = autograd::grad({y}, {x}, {}, {.retain_graph = true, .create_graph = true});
  EXPECT_LT(max_abs_diff(g[0], x.detach() * x.detach() * 3.0), 1e-12);
  auto g2 = autograd::grad({g[0].sum()}, {x});
  EXPECT_LT(max_abs_diff(g2[0], x.detach() * 6.0), 1e-12);

  Tensor z = randn({4}, kFloat64).requires_grad_();
  Tensor t = z.tanh().sum();  // d2/dz2 tanh = -2 tanh (1 - tanh^2)
  auto gz = autograd::grad({t}, {z}, {}, {.create_graph = true});
  auto gz2 = autograd::grad({gz[0].sum()}, {z});
  Tensor th = z.detach().tanh();
  EXPECT_LT(max_abs_diff(gz2[0], th * -2.0 * (1.0 - th * th)), 1e-12);
}

TEST(Autograd, GradDoesNotTouchLeafGrads) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor w = randn({3}, kFloat64).requires_grad_();
  auto g = autograd::grad({(x * w).sum()}, {x});
  EXPECT_LT(max_abs_diff(g[0], w.detach()), 1e-12);
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  Tensor unused = randn({2}, kFloat64).requires_grad_();
  EXPECT_THROW(autograd::grad({(x * 2.0).sum()}, {unused}), Error);
  auto maybe = autograd::grad({(x * 2.0).sum()}, {unused}, {}, {}, /*allow_unused=*/true);
  EXPECT_FALSE(maybe[0].defined());
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Tensor x = randn({3}).requires_grad_();
  EXPECT_THROW((x * 2.0).backward(), Error);
  (x * 2.0).backward(full({3}, 0.5));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(Autograd, CheckpointEqualsPlainBackward) {
  Tensor x = randn({4, 3}, kFloat64).requires_grad_();
  Tensor w = randn({3, 3}, kFloat64).requires_grad_();
  auto block = [&](const std::vector<Tensor>& in) { return (in[0] * w.sum({0})).tanh().sin() * in[0]; };

  block({x}).pow(2).sum().backward();
  Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.set_grad({});
  w.set_grad({});

  Tensor out = autograd::checkpoint(block, {x});
  out.pow(2).sum().backward();
  EXPECT_LT(max_abs_diff(x.grad(), gx), 1e-12);
  EXPECT_LT(max_abs_diff(w.grad(), gw), 1e-12);  // captured weights get gradients too
}

TEST(Autograd, CheckpointReplaysRandomOps) {
  Tensor x = randn({64}, kFloat64).requires_grad_();
  auto noisy = [](const std::vector<Tensor>& in) { return in[0] * rand({64}, kFloat64); };
  manual_seed(7);
  Tensor out = autograd::checkpoint(noisy, {x});
  out.sum().backward();
  // The gradient is the noise itself, so it must equal what the forward drew.
  EXPECT_LT(max_abs_diff(x.grad(), out.detach() / x.detach()), 1e-9);
}

// Regressions from a review of core/: each test failed before its fix.
// AccumulateGrad stole a gradient whenever its *storage* had one TensorImpl,
// even when that impl was also held elsewhere (here: the caller's gradient
// tensor, passed straight through by clone's identity backward). .grad() then
// aliased the caller's tensor, and the next backward's in-place accumulation
// wrote into it.
TEST(AutogradRegressions, LeafGradDoesNotAliasTheGradientPassedToBackward) {
  Tensor x = randn({4}, kFloat64).requires_grad_();
  Tensor g = randn({4}, kFloat64);
  const std::vector<double> g0 = g.to_vector<double>();
  x.clone().backward(g);
  x.clone().backward(g);
  EXPECT_EQ(g.to_vector<double>(), g0) << "backward modified the gradient tensor it was given";
  EXPECT_LT(max_abs_diff(x.grad(), g * 2.0), 1e-12);
  x.grad().zero_();
  EXPECT_EQ(g.to_vector<double>(), g0) << "x.grad() aliases the gradient tensor given to backward";
}

// add's backward hands the same tensor to both leaves; under create_graph the
// two .grad()s (and the caller's gradient) were one tensor.
TEST(AutogradRegressions, LeavesSharingAnIncomingGradientGetTheirOwnGrad) {
  Tensor a = randn({3}, kFloat64).requires_grad_();
  Tensor b = randn({3}, kFloat64).requires_grad_();
  Tensor g = randn({3}, kFloat64);
  const std::vector<double> g0 = g.to_vector<double>();
  autograd::backward({a + b}, {g}, {/*retain_graph=*/false, /*create_graph=*/true});
  ASSERT_TRUE(a.grad().defined() && b.grad().defined());
  EXPECT_FALSE(a.grad().same(b.grad()));
  EXPECT_FALSE(a.grad().same(g));
  {
    NoGradGuard no_grad;
    Tensor ag = a.grad();
    ag.mul_(0.0);
  }
  EXPECT_EQ(b.grad().to_vector<double>(), g0);
  EXPECT_EQ(g.to_vector<double>(), g0);
}

// Two threads running backward through graphs that share a leaf both
// accumulated into its .grad() without a lock: updates were lost (and the
// first assignment of .grad() raced).
TEST(AutogradRegressions, ConcurrentBackwardIntoOneLeafLosesNoUpdates) {
  const int64_t n = 1 << 16;
  const int iterations = 50;
  Tensor x = randn({n}).requires_grad_();
  auto work = [&] {
    for (int i = 0; i < iterations; ++i) (x * 1.0).sum().backward();
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().min().item<float>(), 2.0f * iterations);
  EXPECT_EQ(x.grad().max().item<float>(), 2.0f * iterations);
}

}  // namespace
}  // namespace anvil
