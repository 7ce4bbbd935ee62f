// CPU backend memory, copies, fill and streams, called directly on Views.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/shapes/matmul_checks.h"
#include "core/dispatch.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

using shapes::transposed;

TEST(CpuMemory, ContiguousCopyIsExact) {
  std::mt19937 rng(1);
  auto src = random_tensor<float>({5, 7}, rng);
  auto dst = filled_tensor<float>({5, 7});
  cpu().copy(dst.view, src.view);
  EXPECT_EQ(dst.storage, src.storage);
}

TEST(CpuMemory, CopyFromTransposedAndIntoStrided) {
  std::mt19937 rng(2);
  // Big enough to be split over threads (kParallelGrain elements).
  auto src = random_tensor<float>({600, 513}, rng);
  const View src_t = transposed(src.view);  // [513, 600], not contiguous
  auto dst = filled_tensor<float>({513, 600});
  cpu().copy(dst.view, src_t);
  for (int64_t i = 0; i < 513; i += 13)
    for (int64_t j = 0; j < 600; j += 7) ASSERT_EQ(at(dst.view, {i, j}), at(src.view, {j, i}));
  EXPECT_EQ(values(dst.view), values(src_t));

  // Into every other element of a wider buffer: the gaps stay untouched.
  auto wide = filled_tensor<double>({3, 5}, Shape{10, 2}, -7.0);
  auto small = random_tensor<double>({3, 5}, rng);
  cpu().copy(wide.view, small.view);
  EXPECT_EQ(values(wide.view), values(small.view));
  for (int64_t k = 1; k < static_cast<int64_t>(wide.storage.size()); k += 2) EXPECT_EQ(wide.storage[k], -7.0);
}

// Permuted sources, copied in tiles: batched transposes and NCHW -> NHWC.
TEST(CpuMemory, CopyOfPermutedViews) {
  std::mt19937 rng(3);
  auto src = random_tensor<double>({3, 45, 70}, rng);
  View batched_t = src.view;  // [3, 70, 45]
  std::swap(batched_t.shape[1], batched_t.shape[2]);
  std::swap(batched_t.strides[1], batched_t.strides[2]);
  auto dst = filled_tensor<double>(batched_t.shape);
  cpu().copy(dst.view, batched_t);
  EXPECT_EQ(values(dst.view), values(batched_t));

  auto nchw = random_tensor<Half>({2, 5, 33, 34}, rng);
  const View nhwc{nchw.storage.data(), kFloat16, {2, 33, 34, 5}, {5 * 33 * 34, 34, 1, 33 * 34}};
  auto out = filled_tensor<Half>(nhwc.shape);
  cpu().copy(out.view, nhwc);
  EXPECT_EQ(values(out.view), values(nhwc));
}

TEST(CpuMemory, CopyFromBroadcastSource) {
  auto row = tensor_of<int32_t>({1, 4}, {1, 2, 3, 4});
  View expanded = row.view;
  expanded.shape = {3, 4};
  expanded.strides = {0, 1};
  auto dst = filled_tensor<int32_t>({3, 4}, 0.0);
  cpu().copy(dst.view, expanded);
  EXPECT_EQ(dst.storage, (std::vector<int32_t>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
}

// Every pair of the eight dtypes, on values every dtype holds exactly.
TEST(CpuMemory, CopyConvertsBetweenAllDtypes) {
  const std::vector<double> vals = {0, 1, 2, 3, 0, 5, 1, 7};
  const DType all[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
  for (DType from : all) {
    for (DType to : all) {
      std::vector<unsigned char> src_bytes(vals.size() * 8), dst_bytes(vals.size() * 8, 0xAB);
      const View src{src_bytes.data(), from, {2, 4}, {4, 1}};
      const View dst{dst_bytes.data(), to, {2, 4}, {4, 1}};
      for (size_t i = 0; i < vals.size(); ++i) {
        const double v = from == kBool ? (vals[i] != 0) : vals[i];
        set_at(src, {static_cast<int64_t>(i / 4), static_cast<int64_t>(i % 4)}, v);
      }
      cpu().copy(dst, src);
      for (size_t i = 0; i < vals.size(); ++i) {
        const double expected = (from == kBool || to == kBool) ? (vals[i] != 0) : vals[i];
        EXPECT_EQ(at(dst, {static_cast<int64_t>(i / 4), static_cast<int64_t>(i % 4)}), expected)
            << from << " -> " << to << " element " << i;
      }
    }
  }
}

TEST(CpuMemory, FloatToIntegerTruncatesAndRoundsToHalf) {
  auto src = tensor_of<float>({4}, {2.7, -2.7, 0.4, 65504.0});
  auto ints = filled_tensor<int32_t>({4}, 0.0);
  cpu().copy(ints.view, src.view);
  EXPECT_EQ(ints.storage, (std::vector<int32_t>{2, -2, 0, 65504}));

  auto third = tensor_of<double>({1}, {1.0 / 3.0});
  auto h = filled_tensor<Half>({1}, 0.0);
  cpu().copy(h.view, third.view);
  EXPECT_EQ(h.storage[0].bits, Half(1.0f / 3.0f).bits);
  EXPECT_NEAR(static_cast<float>(h.storage[0]), 1.0 / 3.0, 1e-3);
}

TEST(CpuMemory, FillWritesEveryDtypeAndRespectsStrides) {
  auto f = filled_tensor<float>({2, 3});
  kernel_for<kernel::Fill>(DeviceType::CPU)(f.view, Scalar(1.5));
  for (float v : f.storage) EXPECT_EQ(v, 1.5f);

  auto h = filled_tensor<Half>({5});
  kernel_for<kernel::Fill>(DeviceType::CPU)(h.view, Scalar(-2.25));
  for (Half v : h.storage) EXPECT_EQ(static_cast<float>(v), -2.25f);

  auto i64 = filled_tensor<int64_t>({3}, 0.0);
  kernel_for<kernel::Fill>(DeviceType::CPU)(i64.view, Scalar(int64_t{1} << 40));
  for (int64_t v : i64.storage) EXPECT_EQ(v, int64_t{1} << 40);

  std::vector<uint8_t> bools(4, 0);
  kernel_for<kernel::Fill>(DeviceType::CPU)(View{bools.data(), kBool, {4}, {1}}, Scalar(true));
  for (uint8_t v : bools) EXPECT_EQ(v, 1);

  // A column of a row-major matrix: only that column changes.
  auto m = filled_tensor<double>({4, 3}, 0.0);
  View column = m.view;
  column.shape = {4};
  column.strides = {3};
  column.data = m.storage.data() + 1;
  kernel_for<kernel::Fill>(DeviceType::CPU)(column, Scalar(9));
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(at(m.view, {r, 0}), 0.0);
    EXPECT_EQ(at(m.view, {r, 1}), 9.0);
    EXPECT_EQ(at(m.view, {r, 2}), 0.0);
  }

  // A large fill takes the threaded path.
  auto big = filled_tensor<float>({300000});
  kernel_for<kernel::Fill>(DeviceType::CPU)(big.view, Scalar(3));
  for (float v : big.storage) ASSERT_EQ(v, 3.0f);
}

TEST(CpuMemory, HostCopiesAndAllocator) {
  Runtime& b = cpu();
  Allocator& alloc = b.allocator(0);
  void* p = alloc.allocate(64 * sizeof(float));
  ASSERT_NE(p, nullptr);
  std::vector<float> host(64), back(64, 0.0f);
  for (int i = 0; i < 64; ++i) host[i] = static_cast<float>(i) * 0.5f;
  b.copy_from_host(p, host.data(), 64 * sizeof(float), 0, false);
  b.copy_to_host(back.data(), p, 64 * sizeof(float), 0, true);
  EXPECT_EQ(back, host);
  alloc.deallocate(p);
  EXPECT_NE(error_message([&] { b.allocator(1); }), "");
}

TEST(CpuMemory, CpuHasOneStream) {
  Runtime& b = cpu();
  const Stream s = b.current_stream(0);
  EXPECT_EQ(s.id, 0u);
  EXPECT_TRUE(s.device.is_cpu());
  EXPECT_EQ(b.new_stream(0), s);
  b.set_current_stream(s);
  b.synchronize(0);
  b.stream_wait(s, s);
  const std::string msg = error_message([&] { b.set_current_stream(Stream{Device::cpu(), 3}); });
  EXPECT_NE(msg.find("stream"), std::string::npos) << msg;
}

TEST(CpuMemory, CopyShapeMismatchThrows) {
  auto a = filled_tensor<float>({2, 3});
  auto c = filled_tensor<float>({3, 2});
  const std::string msg = error_message([&] { cpu().copy(a.view, c.view); });
  EXPECT_NE(msg.find("copy"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
