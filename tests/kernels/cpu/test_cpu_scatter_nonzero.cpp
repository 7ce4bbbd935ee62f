// The CPU backend's scatter (overwrite and multiply, into strided outputs)
// and nonzero (strided inputs, an output sized wrong) against naive loops.
#include <gtest/gtest.h>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

TEST(CpuScatter, OverwriteAndMultiplyIntoAStridedOutputInIndexOrder) {
  std::mt19937 rng(61);
  for (ScatterReduce reduce : {ScatterReduce::None, ScatterReduce::Multiply}) {
    // out [5, 4] stored transposed; index [6, 3] with repeats along dim 0.
    auto out = random_tensor<double>({5, 4}, strides_in_order({5, 4}, {1, 0}), rng);
    auto src = random_tensor<double>({7, 3}, rng);
    auto index = filled_tensor<int64_t>({6, 3}, 0.0);
    std::uniform_int_distribution<int64_t> dist(0, 4);
    for (auto& v : index.storage) v = dist(rng);
    std::vector<double> expected = values(out.view);
    for_each_index({6, 3}, [&](const Shape& i) {
      const int64_t row = static_cast<int64_t>(at(index.view, i));
      double& e = expected[row * 4 + i[1]];
      e = reduce == ScatterReduce::None ? at(src.view, i) : e * at(src.view, i);
    });
    kernel_for<kernel::Scatter>(DeviceType::CPU)(out.view, 0, index.view, src.view, reduce);
    expect_close(values(out.view), expected, 1e-12, 0, "scatter");
  }
}

TEST(CpuScatter, BadArgumentsNameScatter) {
  auto out = filled_tensor<float>({3, 2}, 0.0);
  auto src = filled_tensor<float>({3, 2}, 1.0);
  auto index = tensor_of<int64_t>({1, 2}, {0, 3});
  EXPECT_NE(error_message([&] {
              kernel_for<kernel::Scatter>(DeviceType::CPU)(out.view, 0, index.view, src.view, ScatterReduce::None);
            }).find("scatter: index 3 is out of range for dim 0 of size 3"),
            std::string::npos);
  auto flat = tensor_of<int64_t>({2}, {0, 1});
  EXPECT_NE(error_message([&] {
              kernel_for<kernel::Scatter>(DeviceType::CPU)(out.view, 0, flat.view, src.view, ScatterReduce::None);
            }).find("scatter: ranks differ"),
            std::string::npos);
  auto flags = filled_tensor<uint8_t>({3, 2}, 1.0), bools = filled_tensor<uint8_t>({1, 2}, 1.0);
  flags.view.dtype = bools.view.dtype = kBool;  // bool storage as bytes (std::vector<bool> has no data())
  auto zero = tensor_of<int64_t>({1, 2}, {0, 0});
  EXPECT_NE(error_message([&] {
              kernel_for<kernel::Scatter>(DeviceType::CPU)(flags.view, 0, zero.view, bools.view,
                                                           ScatterReduce::Multiply);
            }).find("multiply"),
            std::string::npos);
}

TEST(CpuNonzero, StridedInputAndAWrongSizeIsRefused) {
  std::mt19937 rng(62);
  auto in = random_tensor<float>({4, 6}, strides_in_order({4, 6}, {1, 0}), rng);
  for (size_t i = 0; i < in.storage.size(); i += 3) in.storage[i] = 0;
  std::vector<double> expected;
  for_each_index({4, 6}, [&](const Shape& i) {
    if (at(in.view, i) != 0) expected.insert(expected.end(), {double(i[0]), double(i[1])});
  });
  const int64_t n = static_cast<int64_t>(expected.size() / 2);
  auto out = filled_tensor<int64_t>({n, 2}, -1.0);
  kernel_for<kernel::Nonzero>(DeviceType::CPU)(out.view, in.view);
  EXPECT_EQ(values(out.view), expected);
  auto wrong = filled_tensor<int64_t>({n + 1, 2}, -1.0);
  EXPECT_NE(error_message([&] { kernel_for<kernel::Nonzero>(DeviceType::CPU)(wrong.view, in.view); }).find("room for"),
            std::string::npos);
  auto bad_dtype = filled_tensor<int32_t>({n, 2}, 0.0);
  EXPECT_NE(error_message([&] {
              kernel_for<kernel::Nonzero>(DeviceType::CPU)(bad_dtype.view, in.view);
            }).find("nonzero: expected an int64 output"),
            std::string::npos);
}

}  // namespace
}  // namespace anvil::test
