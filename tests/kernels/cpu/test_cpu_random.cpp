// CPU random fills and dropout: the values follow the Philox convention of
// core/base/philox.h by logical element index, whatever the output's layout.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/base/philox.h"
#include "core/dispatch.h"
#include "kernels/shapes/matmul_checks.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

using shapes::transposed;

TEST(CpuRandom, UniformFollowsPhiloxByLogicalIndex) {
  const RandomParams p{RandomKind::Uniform, -2.0, 3.0, 1234, 77};
  auto out = filled_tensor<float>({50000});  // threaded
  kernel_for<kernel::Random>(DeviceType::CPU)(out.view, p);
  for (uint64_t i = 0; i < out.storage.size(); ++i)
    ASSERT_NEAR(out.storage[i], -2.0 + 5.0 * philox::uniform_at(1234, 77, i), 1e-6) << i;
  double mean = 0;
  for (float v : out.storage) {
    ASSERT_GE(v, -2.0f);
    ASSERT_LT(v, 3.0f);
    mean += v;
  }
  EXPECT_NEAR(mean / out.storage.size(), 0.5, 0.03);
}

TEST(CpuRandom, StridedOutputGetsTheSameNumbersAsContiguous) {
  const RandomParams p{RandomKind::Normal, 0.0, 1.0, 99, 5};
  auto dense = filled_tensor<double>({7, 11});
  kernel_for<kernel::Random>(DeviceType::CPU)(dense.view, p);
  auto storage = filled_tensor<double>({11, 7});
  const View t = transposed(storage.view);  // logical [7, 11], column-major in memory
  kernel_for<kernel::Random>(DeviceType::CPU)(t, p);
  EXPECT_EQ(values(t), values(dense.view));
  for (uint64_t i = 0; i < dense.storage.size(); ++i) EXPECT_NEAR(dense.storage[i], philox::normal_at(99, 5, i), 1e-6);
}

TEST(CpuRandom, NormalMomentsAndOtherDtypes) {
  const RandomParams p{RandomKind::Normal, 1.5, 2.0, 7, 0};
  auto out = filled_tensor<float>({100000});
  kernel_for<kernel::Random>(DeviceType::CPU)(out.view, p);
  double mean = 0, sq = 0;
  for (float v : out.storage) mean += v;
  mean /= out.storage.size();
  for (float v : out.storage) sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 1.5, 0.03);
  EXPECT_NEAR(std::sqrt(sq / out.storage.size()), 2.0, 0.03);

  auto h = filled_tensor<Half>({64});
  kernel_for<kernel::Random>(DeviceType::CPU)(h.view, p);
  for (uint64_t i = 0; i < 64; ++i)
    EXPECT_NEAR(static_cast<float>(h.storage[i]), 1.5 + 2.0 * philox::normal_at(7, 0, i), 1e-2);
}

TEST(CpuRandom, IntegerUniformIsRandint) {
  const RandomParams p{RandomKind::Uniform, -3.0, 4.0, 42, 0};
  auto out = filled_tensor<int64_t>({5000}, 100.0);
  kernel_for<kernel::Random>(DeviceType::CPU)(out.view, p);
  std::set<int64_t> seen(out.storage.begin(), out.storage.end());
  EXPECT_EQ(seen, (std::set<int64_t>{-3, -2, -1, 0, 1, 2, 3}));
  for (uint64_t i = 0; i < 100; ++i)
    EXPECT_EQ(out.storage[i], static_cast<int64_t>(std::floor(-3.0 + 7.0 * philox::uniform_at(42, 0, i))));

  auto i32 = filled_tensor<int32_t>({1000}, 100.0);
  kernel_for<kernel::Random>(DeviceType::CPU)(i32.view, RandomParams{RandomKind::Uniform, 0.0, 10.0, 1, 0});
  for (int32_t v : i32.storage) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 10);
  }
  const std::string msg =
      error_message([&] { kernel_for<kernel::Random>(DeviceType::CPU)(i32.view, RandomParams{RandomKind::Normal}); });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(CpuRandom, DropoutMaskScaleAndLayout) {
  std::mt19937 rng(40);
  const double p = 0.3;
  auto in = random_tensor<float>({200, 300}, rng);  // threaded
  auto out = filled_tensor<float>({200, 300});
  auto mask = filled_tensor<uint8_t>({200, 300}, 7.0);
  kernel_for<kernel::Dropout>(DeviceType::CPU)(out.view, mask.view, in.view, p, 11, 3);
  int64_t kept = 0;
  for (uint64_t i = 0; i < in.storage.size(); ++i) {
    const bool keep = philox::uniform_at(11, 3, i) >= p;
    ASSERT_EQ(mask.storage[i], keep ? 1 : 0) << i;
    ASSERT_NEAR(out.storage[i], keep ? in.storage[i] / (1 - p) : 0.0, 1e-6) << i;
    kept += keep;
  }
  EXPECT_NEAR(static_cast<double>(kept) / in.storage.size(), 1 - p, 0.01);

  // A transposed output keeps the decision of each logical element.
  auto out_store = filled_tensor<float>({300, 200});
  auto mask_store = filled_tensor<uint8_t>({300, 200}, 7.0);
  kernel_for<kernel::Dropout>(DeviceType::CPU)(transposed(out_store.view), transposed(mask_store.view), in.view, p, 11,
                                               3);
  EXPECT_EQ(values(transposed(out_store.view)), values(out.view));
  EXPECT_EQ(values(transposed(mask_store.view)), values(mask.view));
}

TEST(CpuRandom, DropoutEdgeProbabilities) {
  std::mt19937 rng(41);
  auto in = random_tensor<double>({100}, rng);
  auto out = filled_tensor<double>({100});
  auto mask = filled_tensor<uint8_t>({100}, 7.0);
  kernel_for<kernel::Dropout>(DeviceType::CPU)(out.view, mask.view, in.view, 0.0, 1, 0);
  EXPECT_EQ(out.storage, in.storage);
  kernel_for<kernel::Dropout>(DeviceType::CPU)(out.view, mask.view, in.view, 1.0, 1, 0);
  for (double v : out.storage) EXPECT_EQ(v, 0.0);
  for (uint8_t m : mask.storage) EXPECT_EQ(m, 0);
  const std::string msg =
      error_message([&] { kernel_for<kernel::Dropout>(DeviceType::CPU)(out.view, mask.view, in.view, 1.5, 1, 0); });
  EXPECT_NE(msg.find("dropout"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
