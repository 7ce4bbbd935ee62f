// Regressions found in a review of core/: each test failed before its fix.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "core/random.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::max_abs_diff;

// AccumulateGrad stole a gradient whenever its *storage* had one TensorImpl,
// even when that impl was also held elsewhere (here: the caller's gradient
// tensor, passed straight through by clone's identity backward). .grad() then
// aliased the caller's tensor, and the next backward's in-place accumulation
// wrote into it.
TEST(ReviewRegressions, LeafGradDoesNotAliasTheGradientPassedToBackward) {
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
TEST(ReviewRegressions, LeavesSharingAnIncomingGradientGetTheirOwnGrad) {
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

// slice's backward wrote the gradient into a zero tensor through an in-place
// copy_ on a view of it; under create_graph only the view took the history,
// so the returned full gradient had none and second derivatives were lost.
TEST(ReviewRegressions, SliceBackwardIsDifferentiable) {
  Tensor x = randn({6}, kFloat64).requires_grad_();
  Tensor z = x.slice(0, 1, 6, 2).pow(3).sum();  // elements 1, 3, 5
  Tensor dx = autograd::grad({z}, {x}, {}, {/*retain_graph=*/false, /*create_graph=*/true})[0];
  ASSERT_TRUE(dx.requires_grad()) << "the gradient of slice carries no history under create_graph";
  Tensor ddx = autograd::grad({dx.sum()}, {x})[0];
  std::vector<double> xv = x.to_vector<double>(), expected(6, 0.0);
  for (int i = 1; i < 6; i += 2) expected[i] = 6.0 * xv[i];
  EXPECT_LT(max_abs_diff(ddx, from_vector(expected, {6}, kFloat64)), 1e-10);
}

TEST(ReviewRegressions, SelectBackwardIsDifferentiable) {
  Tensor x = randn({3, 2}, kFloat64).requires_grad_();
  Tensor z = (x.select(0, 1) * x.select(0, 1)).sum();
  Tensor dx = autograd::grad({z}, {x}, {}, {false, true})[0];
  ASSERT_TRUE(dx.requires_grad());
  Tensor ddx = autograd::grad({(dx * dx).sum()}, {x})[0];  // d/dx sum((2 x_1)^2) = 8 x_1 on row 1
  std::vector<double> xv = x.to_vector<double>(), expected(6, 0.0);
  expected[2] = 8.0 * xv[2];
  expected[3] = 8.0 * xv[3];
  EXPECT_LT(max_abs_diff(ddx, from_vector(expected, {3, 2}, kFloat64)), 1e-10);
}

// In-place binary ops read `other` while writing self; when other overlaps
// self in another layout (a transpose, a broadcast row of self) the kernel
// read values it had already overwritten.
TEST(ReviewRegressions, InplaceAddWithTransposeOfSelf) {
  Tensor x = randn({3, 3}, kFloat64);
  Tensor expected = x + x.t();
  x.add_(x.t());
  EXPECT_LT(max_abs_diff(x, expected), 1e-12);
}

TEST(ReviewRegressions, InplaceMulWithBroadcastRowOfSelf) {
  Tensor x = randn({4, 5}, kFloat32);
  Tensor expected = x * x.select(0, 0);
  x.mul_(x.select(0, 0));
  EXPECT_LT(max_abs_diff(x, expected), 1e-6);
}

// copy_ from an overlapping region of the same storage (a shift) copied
// element by element in order and propagated the first value.
TEST(ReviewRegressions, CopyFromOverlappingShiftedView) {
  Tensor x = randn({6, 2}, kFloat64);
  std::vector<double> before = x.to_vector<double>();
  Tensor col = x.select(1, 0);  // stride 2: not a memcpy
  col.slice(0, 1, 6).copy_(col.slice(0, 0, 5));
  std::vector<double> after = x.to_vector<double>();
  EXPECT_EQ(after[0], before[0]);
  for (int i = 1; i < 6; ++i) {
    EXPECT_EQ(after[2 * i], before[2 * (i - 1)]) << "row " << i;
    EXPECT_EQ(after[2 * i + 1], before[2 * i + 1]) << "row " << i;
  }
}

TEST(ReviewRegressions, CopyFromOverlappingContiguousView) {
  const int64_t n = 1 << 20;  // large enough to split over threads
  Tensor x = arange(static_cast<double>(n), kFloat64);
  x.slice(0, 1, n).copy_(x.slice(0, 0, n - 1));
  std::vector<double> v = x.to_vector<double>();
  EXPECT_EQ(v[0], 0.0);
  int64_t wrong = 0;
  for (int64_t i = 1; i < n; ++i) wrong += v[i] != static_cast<double>(i - 1);
  EXPECT_EQ(wrong, 0);
}

// copy_ from a source without history into a tensor with history left the
// old history in place, so the overwritten values still sent gradient back.
TEST(ReviewRegressions, CopyOfConstantIntoNonLeafCutsItsHistory) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  Tensor c = randn({3}, kFloat64);
  y.copy_(c);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_LT(max_abs_diff(y, c), 1e-15);
  Tensor loss = (x * 3.0).sum() + (y * x).sum();  // d/dx = 3 + c
  loss.backward();
  EXPECT_LT(max_abs_diff(x.grad(), c + 3.0), 1e-12);
}

// View::is_contiguous expected the stride after a size-0 dim to be 0, so a
// fresh [3, 0] tensor was "non-contiguous" (contiguous() copied it, and
// kernels that require contiguous operands, like the optimizers, refused it).
TEST(ReviewRegressions, EmptyTensorWithTrailingZeroDimIsContiguous) {
  Tensor t = empty({3, 0});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(t.contiguous().same(t));
  EXPECT_TRUE(zeros({2, 0, 4}).is_contiguous());
}

// expand accepted a negative size for a size-1 dim and returned a view with a
// negative numel; the error surfaced later in an unrelated op.
TEST(ReviewRegressions, ExpandRejectsNegativeSizes) {
  Tensor x = randn({1, 3});
  EXPECT_THROW(x.expand({-2, 3}), Error);
  EXPECT_THROW(x.expand({2, -3}), Error);
  EXPECT_EQ(x.expand({4, -1}).shape(), (Shape{4, 3}));
}

// Two threads running backward through graphs that share a leaf both
// accumulated into its .grad() without a lock: updates were lost (and the
// first assignment of .grad() raced).
TEST(ReviewRegressions, ConcurrentBackwardIntoOneLeafLosesNoUpdates) {
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

// Printing a summarized tensor chose the number format (and column width)
// from the first and last three values only; a printed value outside those
// (row 1 here) was longer than the width, and padding it with
// width - length spaces underflowed: to_string threw std::length_error.
TEST(ReviewRegressions, PrintingASummarizedTensorFormatsEveryPrintedValue) {
  std::vector<float> v(100 * 100, 0.0f);
  v[100] = -123.25f;  // row 1, column 0: printed, but not a first or last flat value
  Tensor x = from_vector(v, {100, 100});
  std::string s;
  ASSERT_NO_THROW(s = to_string(x));
  EXPECT_NE(s.find("-123.2500"), std::string::npos) << s;
}

// The 16-bit uniform fill rounded values just below `high` up to `high`
// itself: rand() in float16 returned 1.0 about once in 4096 draws (bfloat16:
// once in 512), so log(1 - u) became -inf.
TEST(ReviewRegressions, Uniform16BitStaysBelowHigh) {
  manual_seed(1234);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor u = rand({1 << 16}, dt).to(kFloat32);
    EXPECT_LT(u.max().item<float>(), 1.0f) << dt;
    EXPECT_GE(u.min().item<float>(), 0.0f) << dt;
  }
}

}  // namespace
}  // namespace anvil
