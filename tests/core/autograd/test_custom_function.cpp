// Custom autograd functions (Function<T> with an AutogradContext), in
// libtorch's shape: gradients against finite differences, several outputs,
// non-differentiable outputs, in-place (dirty) inputs, needs_input_grad,
// create_graph through a saved output, and the bad uses.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/custom_function.h"
#include "core/autograd/engine.h"
#include "core/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;
using testing::expect_error;
using testing::gradcheck;
using testing::max_abs_diff;

// y = x * w + c: a tensor argument, a second one and a non-tensor one.
struct MulAdd : autograd::Function<MulAdd> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, double c) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["c"] = c;
    return x * w + c;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto saved = ctx->get_saved_variables();
    EXPECT_EQ(ctx->saved_data["c"].toDouble(), 0.5);
    return {g[0] * saved[1], g[0] * saved[0], Tensor()};
  }
};

// exp saves its own output (no reference cycle; create_graph reattaches it).
struct Exp : autograd::Function<Exp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

// Two outputs from a tensor list: (a * b, a + b).
struct ProductAndSum : autograd::Function<ProductAndSum> {
  static variable_list forward(AutogradContext* ctx, const variable_list& ab) {
    ctx->save_for_backward(ab);
    return {ab[0] * ab[1], ab[0] + ab[1]};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    return {g[0] * s[1] + g[1], g[0] * s[0] + g[1]};
  }
};

TEST(CustomFunction, GradientsMatchFiniteDifferences) {
  manual_seed(1);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return MulAdd::apply(in[0], in[1], 0.5); },
                        {randn({3, 4}, kFloat64), randn({3, 4}, kFloat64)}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return Exp::apply(in[0] * 0.5).sin(); }, {randn({5}, kFloat64)}));
}

TEST(CustomFunction, MatchesTheSameComputationWithBuiltInOps) {
  manual_seed(2);
  Tensor x = randn({4}, kFloat64).requires_grad_(), w = randn({4}, kFloat64).requires_grad_();
  Tensor y = MulAdd::apply(x, w, 0.5);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_NE(y.grad_fn()->name().find("MulAdd"), std::string::npos) << y.grad_fn()->name();
  EXPECT_LT(max_abs_diff(y, x.detach() * w.detach() + 0.5), 1e-15);
  (y * y).sum().backward();
  Tensor xs = x.detach(), ws = w.detach();
  EXPECT_LT(max_abs_diff(x.grad(), (xs * ws + 0.5) * 2.0 * ws), 1e-12);
  EXPECT_LT(max_abs_diff(w.grad(), (xs * ws + 0.5) * 2.0 * xs), 1e-12);
}

TEST(CustomFunction, SeveralOutputsFromATensorList) {
  manual_seed(3);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        variable_list out = ProductAndSum::apply(variable_list{in[0], in[1]});
        return out[0] * 2.0 + out[1].sin();
      },
      {randn({2, 3}, kFloat64), randn({2, 3}, kFloat64)}));
  // Only the second output used: the first one's gradient arrives as zeros.
  Tensor a = randn({3}, kFloat64).requires_grad_(), b = randn({3}, kFloat64).requires_grad_();
  variable_list out = ProductAndSum::apply(variable_list{a, b});
  ASSERT_EQ(out.size(), 2u);
  out[1].sum().backward();
  EXPECT_LT(max_abs_diff(a.grad(), ones({3}, kFloat64)), 1e-15);
  EXPECT_LT(max_abs_diff(b.grad(), ones({3}, kFloat64)), 1e-15);
}

// Sorts a 1-D tensor; the indices are non-differentiable, and so is a float
// mask it marks so explicitly.
struct SortWithMask : autograd::Function<SortWithMask> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    auto [values, indices] = x.sort(0);
    Tensor mask = (values > 0).to(x.dtype());
    ctx->mark_non_differentiable({indices, mask});
    ctx->save_for_backward({indices});
    ctx->saved_data["n"] = x.size(0);
    return {values, indices, mask};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    EXPECT_TRUE(g[2].defined());  // materialized: zeros for the mask
    EXPECT_EQ(g[2].abs().sum().item<double>(), 0.0);
    Tensor idx = ctx->get_saved_variables()[0];
    Tensor gx = zeros({ctx->saved_data["n"].toInt()}, g[0].options());
    gx.index_put_({idx}, g[0]);
    return {gx};
  }
};

TEST(CustomFunction, NonDifferentiableOutputsNeedNoGradient) {
  manual_seed(4);
  Tensor x = randn({6}, kFloat64).requires_grad_();
  variable_list out = SortWithMask::apply(x);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  EXPECT_FALSE(out[2].requires_grad());
  EXPECT_EQ(out[1].dtype(), kInt64);
  // The mask does not require grad: backward from it alone is refused.
  EXPECT_THROW(out[2].sum().backward(), Error);
  Tensor w = randn({6}, kFloat64);
  (out[0] * w + out[2]).sum().backward();
  // d/dx of sum(sorted(x) * w) puts w[k] at the position of the k-th smallest.
  std::vector<int64_t> idx = out[1].to_vector<int64_t>();
  std::vector<double> wv = w.to_vector<double>(), g = x.grad().to_vector<double>();
  for (size_t k = 0; k < idx.size(); ++k) EXPECT_DOUBLE_EQ(g[static_cast<size_t>(idx[k])], wv[k]);
}

// x.mul_(2) in place; returns x, marked dirty.
struct DoubleInPlace : autograd::Function<DoubleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2.0}; }
};

TEST(CustomFunction, MarkDirtyRebasesTheInputsHistory) {
  manual_seed(5);
  Tensor leaf = randn({4}, kFloat64).requires_grad_();
  Tensor x = leaf * 3.0;  // not a leaf: may change in place
  const uint64_t version = x.version();
  Tensor y = DoubleInPlace::apply(x);
  EXPECT_EQ(y.impl(), x.impl());  // the same tensor, now with this function as history
  EXPECT_GT(x.version(), version);
  EXPECT_NE(x.grad_fn()->name().find("DoubleInPlace"), std::string::npos);
  EXPECT_LT(max_abs_diff(x, leaf.detach() * 6.0), 1e-15);
  (x * x).sum().backward();
  EXPECT_LT(max_abs_diff(leaf.grad(), leaf.detach() * 72.0), 1e-12);  // d(36 l^2)/dl
}

TEST(CustomFunction, MarkDirtyOnALeafThatRequiresGradIsAnError) {
  Tensor leaf = randn({3}, kFloat64).requires_grad_();
  expect_error([&] { DoubleInPlace::apply(leaf); }, {"DoubleInPlace", "leaf", "in place"});
  // Without grad mode the same call is fine (an optimizer-style update).
  NoGradGuard no_grad;
  Tensor before = leaf.detach().clone();
  DoubleInPlace::apply(leaf);
  EXPECT_LT(max_abs_diff(leaf, before * 2.0), 1e-15);
}

// Records needs_input_grad in forward and backward; computes only what is needed.
struct Scale : autograd::Function<Scale> {
  static std::vector<bool> seen_forward, seen_backward;
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& s) {
    seen_forward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    ctx->save_for_backward({x, s});
    return x * s;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    seen_backward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    auto v = ctx->get_saved_variables();
    Tensor gx = ctx->needs_input_grad(0) ? g[0] * v[1] : Tensor();
    Tensor gs = ctx->needs_input_grad(1) ? (g[0] * v[0]).sum() : Tensor();
    return {gx, gs};
  }
};
std::vector<bool> Scale::seen_forward, Scale::seen_backward;

TEST(CustomFunction, NeedsInputGradSaysWhichInputsWantAGradient) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor s = scalar_tensor(Scalar(1.5), kFloat64);  // a constant
  Scale::apply(x, s).sum().backward();
  EXPECT_EQ(Scale::seen_forward, (std::vector<bool>{true, false}));
  EXPECT_EQ(Scale::seen_backward, (std::vector<bool>{true, false}));
  EXPECT_LT(max_abs_diff(x.grad(), full({3}, 1.5, kFloat64)), 1e-15);

  s.requires_grad_();
  Tensor x2 = randn({3}, kFloat64);
  Scale::apply(x2, s).sum().backward();
  EXPECT_EQ(Scale::seen_forward, (std::vector<bool>{false, true}));
  EXPECT_NEAR(s.grad().item<double>(), x2.sum().item<double>(), 1e-12);

  // Under NoGradGuard nothing needs a gradient and nothing is recorded.
  NoGradGuard no_grad;
  Tensor y = Scale::apply(x, s);
  EXPECT_EQ(Scale::seen_forward, (std::vector<bool>{false, false}));
  EXPECT_FALSE(y.requires_grad());
}

TEST(CustomFunction, CreateGraphDifferentiatesTheBackward) {
  manual_seed(6);
  Tensor x = randn({4}, kFloat64).requires_grad_();
  Tensor y = Exp::apply(x).sum();
  Tensor g = autograd::grad({y}, {x}, {}, {.create_graph = true})[0];
  EXPECT_LT(max_abs_diff(g, x.detach().exp()), 1e-12);
  Tensor gg = autograd::grad({g.sum()}, {x})[0];  // d/dx exp(x) again, through the saved output
  EXPECT_LT(max_abs_diff(gg, x.detach().exp()), 1e-12);
}

TEST(CustomFunction, AnInputReturnedUnchangedGetsItsOwnHistory) {
  struct Identity : autograd::Function<Identity> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
    static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 3.0}; }
  };
  Tensor x = randn({2}, kFloat64).requires_grad_();
  Tensor y = Identity::apply(x);
  EXPECT_NE(y.impl(), x.impl());
  EXPECT_TRUE(x.is_leaf());
  y.sum().backward();
  EXPECT_LT(max_abs_diff(x.grad(), full({2}, 3.0, kFloat64)), 1e-15);
}

// ------------------------------------------------------------ bad uses

struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(AutogradContext*, const Tensor& x, const Tensor& y) { return x + y; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};
struct WrongShape : autograd::Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x.sum(); }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};
struct GradForAnInt : autograd::Function<GradForAnInt> {
  static Tensor forward(AutogradContext*, const Tensor& x, int64_t k) { return x * static_cast<double>(k); }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0]}; }
};
struct DirtyNotReturned : autograd::Function<DirtyNotReturned> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(1.0);
    ctx->mark_dirty({x});
    return x * 2.0;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2.0}; }
};
struct SavesInput : autograd::Function<SavesInput> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * 2.0 * ctx->get_saved_variables()[0]};
  }
};

TEST(CustomFunction, BadUsesGiveClearErrors) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor y = randn({3}, kFloat64).requires_grad_();
  expect_error([&] { WrongCount::apply(x, y).sum().backward(); }, {"WrongCount", "returned 1 gradients, expected 2"});
  expect_error([&] { WrongShape::apply(x).backward(); }, {"WrongShape", "shape [] for input 0 of shape [3]"});
  expect_error([&] { GradForAnInt::apply(x, int64_t{2}).sum().backward(); },
               {"GradForAnInt", "position 1", "not a tensor"});
  Tensor z = x * 1.0;
  expect_error([&] { DirtyNotReturned::apply(z); }, {"DirtyNotReturned", "marked dirty", "not returned"});

  // A saved input changed in place before backward.
  Tensor h = x * 1.0;
  Tensor out = SavesInput::apply(h);
  {
    NoGradGuard no_grad;
    h.add_(1.0);
  }
  expect_error([&] { out.sum().backward(); }, {"SavesInput", "modified in place", "saved tensor 0"});

  // A second backward without retain_graph.
  Tensor once = SavesInput::apply(x);
  once.backward(ones({3}, kFloat64));
  expect_error([&] { once.backward(ones({3}, kFloat64)); }, {"SavesInput", "second time", "retain_graph"});

  // Saved tensors are for backward; the context's calls are for forward.
  struct PeeksInForward : autograd::Function<PeeksInForward> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x) {
      ctx->save_for_backward({x});
      ctx->get_saved_variables();
      return x;
    }
    static variable_list backward(AutogradContext*, variable_list g) { return g; }
  };
  expect_error([&] { PeeksInForward::apply(x); }, {"get_saved_variables is for backward"});
  struct AsksTooFar : autograd::Function<AsksTooFar> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x) {
      (void)ctx->needs_input_grad(1);
      return x;
    }
    static variable_list backward(AutogradContext*, variable_list g) { return g; }
  };
  expect_error([&] { AsksTooFar::apply(x); }, {"AsksTooFar", "needs_input_grad(1)", "1 tensor inputs"});
}

}  // namespace
}  // namespace anvil
