// Tensor metadata, views sharing storage, factories, conversions, printing.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "kernels/runtime.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::max_abs_diff;

TEST(Tensor, ViewsShareStorageAndHaveExpectedStrides) {
  Tensor x = arange(24).reshape({2, 3, 4});
  EXPECT_EQ(x.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(x.strides(), (Shape{12, 4, 1}));
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage().get(), x.storage().get());
  // Element (i, j, k) of x is 12i + 4j + k.
  EXPECT_EQ(t.select(0, 3).select(0, 2).select(0, 1).item<int64_t>(), 12 * 1 + 4 * 2 + 3);
  Tensor p = x.permute({1, 2, 0});
  EXPECT_EQ(p.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(p.contiguous().to_vector<int64_t>()[1], 12);  // p[0][0][1] = x[1][0][0]
}

TEST(Tensor, ViewWritesAreSeenThroughTheBase) {
  Tensor x = zeros({3, 4});
  Tensor row = x.select(0, 1);
  row.fill_(5.0);
  Tensor col = x.narrow(1, 2, 1);
  col.fill_(-1.0);
  auto v = x.to_vector<float>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      float expected = j == 2 ? -1.f : (i == 1 ? 5.f : 0.f);
      EXPECT_EQ(v[i * 4 + j], expected) << i << "," << j;
    }
}

TEST(Tensor, SqueezeUnsqueezeFlattenExpandSlice) {
  Tensor x = randn({2, 1, 3});
  EXPECT_EQ(x.squeeze().shape(), (Shape{2, 3}));
  EXPECT_EQ(x.squeeze(1).shape(), (Shape{2, 3}));
  EXPECT_EQ(x.unsqueeze(0).shape(), (Shape{1, 2, 1, 3}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(x.flatten().shape(), (Shape{6}));
  Tensor e = x.expand({4, 2, 5, 3});
  EXPECT_EQ(e.shape(), (Shape{4, 2, 5, 3}));
  EXPECT_EQ(e.strides()[0], 0);
  EXPECT_EQ(e.strides()[2], 0);
  Tensor a = arange(10);
  EXPECT_EQ(a.slice(0, 1, 9, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(a.slice(0, -3, 10).to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
}

TEST(Tensor, ReshapeCopiesOnlyWhenNeeded) {
  Tensor x = randn({4, 6});
  EXPECT_EQ(x.reshape({3, 8}).storage().get(), x.storage().get());
  Tensor t = x.t();
  Tensor r = t.reshape({24});
  EXPECT_NE(r.storage().get(), x.storage().get());
  EXPECT_EQ(r.to_vector<float>(), t.contiguous().to_vector<float>());
  EXPECT_THROW(t.view({24}), Error);
  EXPECT_EQ(x.view({-1, 12}).shape(), (Shape{2, 12}));
}

TEST(Tensor, FactoriesProduceExpectedValues) {
  EXPECT_EQ(arange(2, 8, 2).to_vector<int64_t>().size(), 3u);
  EXPECT_EQ(arange(0.0, 1.0, 0.25, kFloat32).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  auto e = eye(3).to_vector<float>();
  for (int i = 0; i < 9; ++i) EXPECT_EQ(e[i], i % 4 == 0 ? 1.f : 0.f);
  EXPECT_EQ(full({2, 2}, 7, kInt32).to_vector<int32_t>(), (std::vector<int32_t>{7, 7, 7, 7}));
  auto r = randint(3, 7, {1000}).to_vector<int64_t>();
  for (auto v : r) EXPECT_TRUE(v >= 3 && v < 7) << v;
  auto u = rand({10000}).to_vector<float>();
  double mean = 0;
  for (float v : u) {
    EXPECT_TRUE(v >= 0 && v < 1);
    mean += v;
  }
  EXPECT_NEAR(mean / u.size(), 0.5, 0.02);
}

TEST(Tensor, SeedReplaysTheSameNumbers) {
  manual_seed(123);
  auto a = randn({257}).to_vector<float>();
  auto b = rand({5}).to_vector<float>();
  manual_seed(123);
  EXPECT_EQ(randn({257}).to_vector<float>(), a);
  EXPECT_EQ(rand({5}).to_vector<float>(), b);
}

TEST(Tensor, FromBlobWrapsUserMemoryWithoutCopy) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  bool released = false;
  {
    Tensor t = from_blob(data.data(), {2, 3}, kFloat32, [&](void*) { released = true; });
    t.select(0, 1).fill_(0.0);
    EXPECT_EQ(t.data<float>(), data.data());
  }
  EXPECT_TRUE(released);
  EXPECT_EQ(data, (std::vector<float>{1, 2, 3, 0, 0, 0}));
}

TEST(Tensor, DtypeConversionsRoundTrip) {
  Tensor x = from_vector(std::vector<float>{1.5f, -2.25f, 3.0f, 65504.0f});
  EXPECT_EQ(x.to(kFloat16).to(kFloat32).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(x.to(kBFloat16).dtype(), kBFloat16);
  EXPECT_EQ(x.to(kInt32).to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3, 65504}));
  EXPECT_EQ(x.to(kFloat64).to_vector<double>()[1], -2.25);
  Tensor b = gt(x, 0.0);
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b.to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 1, 1}));
}

TEST(Tensor, PrintsLikePyTorch) {
  EXPECT_EQ(to_string(from_vector(std::vector<float>{1, 2, 3})), "tensor([1., 2., 3.])");
  EXPECT_EQ(to_string(from_vector(std::vector<float>{1.5f, -2.25f}, {1, 2})), "tensor([[ 1.5000, -2.2500]])");
  EXPECT_EQ(to_string(arange(4).reshape({2, 2})), "tensor([[0, 1],\n        [2, 3]])");
  EXPECT_EQ(to_string(from_vector(std::vector<double>{0.5})), "tensor([0.5000], dtype=float64)");
  EXPECT_EQ(to_string(gt(arange(3), 0)), "tensor([False,  True,  True])");
  Tensor w = ones({2}).requires_grad_();
  EXPECT_EQ(to_string(w), "tensor([1., 1.], requires_grad=True)");
  EXPECT_NE(to_string(w * 2.0).find("grad_fn=<mul>"), std::string::npos);
  std::string big = to_string(arange(5000));
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_LT(big.size(), 100u);
}

TEST(Tensor, ItemAndBadAccessErrors) {
  EXPECT_EQ(scalar_tensor(4.5).item<double>(), 4.5);
  EXPECT_THROW(zeros({2}).item(), Error);
  EXPECT_THROW(zeros({2}).data<double>(), Error);
  EXPECT_THROW(zeros({2, 3}).select(1, 3), Error);
  EXPECT_THROW(zeros({2, 3}).transpose(0, 2), Error);
  EXPECT_THROW(zeros({2, 3}).expand({3, 3}), Error);
  EXPECT_THROW(zeros({2, 3}).view({4, 2}), Error);
  EXPECT_THROW(zeros({-1, 3}), Error);
  EXPECT_THROW(Tensor().shape(), Error);
  try {
    zeros({2, 3}).permute({0, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("permute"), std::string::npos);
  }
}

TEST(Tensor, CudaDeviceWithoutGpuGivesAClearError) {
  if (has_runtime(DeviceType::CUDA)) GTEST_SKIP() << "a GPU is present; this checks the no-GPU message";
  try {
    zeros({2}, Device::cuda());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
}

TEST(Tensor, TransposeShorthandFollowsPyTorch) {
  Tensor m = randn({3, 5});
  Tensor mt = m.t();
  EXPECT_EQ(mt.shape(), (Shape{5, 3}));
  EXPECT_EQ(mt.strides(), (Shape{1, 5}));
  // Below 2 dims t() is an alias that shares storage: a write shows through.
  for (Tensor x : {randn({7}), randn({})}) {
    Tensor xt = x.t();
    EXPECT_EQ(xt.shape(), x.shape());
    EXPECT_EQ(xt.strides(), x.strides());
    EXPECT_EQ(xt.data_ptr(), x.data_ptr());
    xt.mul_(2.0);
    EXPECT_EQ(x.to_vector<float>(), xt.to_vector<float>());
  }
  try {
    (void)randn({2, 3, 4}).t();
    FAIL() << "t() of a 3-D tensor should be refused";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("t: expects a tensor with at most 2 dims"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
  }
}

TEST(Tensor, TransposeShorthandOfAVectorPassesTheGradient) {
  Tensor x = randn({6}, kFloat64).requires_grad_();
  Tensor w = randn({6}, kFloat64);
  (x.t() * w).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().to_vector<double>(), w.to_vector<double>());
  Tensor s = randn({}, kFloat64).requires_grad_();
  (s.t() * 3.0).backward();
  EXPECT_EQ(s.grad().item<double>(), 3.0);
  using testing::gradcheck;
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0].t() * in[0]; }, {randn({5}, kFloat64)}));
}

TEST(Tensor, ViewGradientsMatchFiniteDifferences) {
  using testing::gradcheck;
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0].transpose(0, 1).reshape({-1}) * arange(6, kFloat64); },
                {randn({2, 3}, kFloat64)}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].slice(1, 1, 4, 2).expand({3, 2, 2});
      },
      {randn({2, 5}, kFloat64)}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].permute({2, 0, 1}).unsqueeze(1).squeeze();
      },
      {randn({2, 3, 4}, kFloat64)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0].select(0, 1) * in[0].narrow(0, 0, 1); },
                        {randn({3, 4}, kFloat64)}));
}

// Regressions from a review of core/: each test failed before its fix.
// copy_ from an overlapping region of the same storage (a shift) copied
// element by element in order and propagated the first value.
TEST(TensorRegressions, CopyFromOverlappingShiftedView) {
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

TEST(TensorRegressions, CopyFromOverlappingContiguousView) {
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
TEST(TensorRegressions, CopyOfConstantIntoNonLeafCutsItsHistory) {
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
TEST(TensorRegressions, EmptyTensorWithTrailingZeroDimIsContiguous) {
  Tensor t = empty({3, 0});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(t.contiguous().same(t));
  EXPECT_TRUE(zeros({2, 0, 4}).is_contiguous());
}

}  // namespace
}  // namespace anvil

namespace anvil {
namespace {

// A shape read from a file may be anything: negative sizes and element counts
// whose byte size overflows int64 are refused before any allocation.
TEST(TensorFactories, RefuseShapesThatCannotExist) {
  const auto expect_error = [](const Shape& shape, const std::string& needle) {
    try {
      (void)empty(shape);
      ADD_FAILURE() << "expected an error for a shape of " << shape.size() << " dims";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({2, -1}, "negative size");
  expect_error({int64_t{1} << 40, int64_t{1} << 30}, "too many elements");
  expect_error({6109241389266321, 4294967295}, "too many elements");
  expect_error({0, int64_t{1} << 40, int64_t{1} << 40}, "strides overflow");  // empty, but no strides exist
  EXPECT_EQ(empty({0, int64_t{1} << 62}).numel(), 0);  // empty, and its strides fit
  EXPECT_EQ(zeros({3, 0, 5}).numel(), 0);
}

}  // namespace
}  // namespace anvil
