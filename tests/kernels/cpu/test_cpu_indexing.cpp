// CPU index_select, index_add, gather and scatter_add against naive loops,
// with repeated indices, strided views, threaded sizes and bad indices.
#include <gtest/gtest.h>

#include "kernels/shapes/matmul_checks.h"
#include "core/dispatch.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

using shapes::transposed;

TestTensor<int64_t> random_indices(const Shape& shape, int64_t limit, std::mt19937& rng) {
  TestTensor<int64_t> t = filled_tensor<int64_t>(shape, 0.0);
  std::uniform_int_distribution<int64_t> dist(0, limit - 1);
  for (auto& v : t.storage) v = dist(rng);
  return t;
}

template <typename T> void check_index_select(const View& in, int dim, const View& index) {
  Shape out_shape = in.shape;
  out_shape[dim] = index.numel();
  auto out = filled_tensor<T>(out_shape);
  kernel_for<kernel::IndexSelect>(DeviceType::CPU)(out.view, in, dim, index);
  std::vector<double> expected;
  for_each_index(out_shape, [&](const Shape& idx) {
    Shape src = idx;
    src[dim] = static_cast<int64_t>(at(index, {idx[dim]}));
    expected.push_back(at(in, src));
  });
  EXPECT_EQ(values(out.view), expected) << "index_select dim " << dim;
}

TEST(CpuIndexing, IndexSelectEveryDimAndLayout) {
  std::mt19937 rng(50);
  auto in = random_tensor<float>({6, 7, 5}, rng);
  for (int dim = 0; dim < 3; ++dim) {
    auto index = random_indices({9}, in.view.shape[dim], rng);  // repeats are likely
    check_index_select<float>(in.view, dim, index.view);
  }
  auto m = random_tensor<int64_t>({8, 4}, rng, -100, 100);
  auto index = tensor_of<int64_t>({5}, {3, 0, 3, 1, 2});
  check_index_select<int64_t>(transposed(m.view), 0, index.view);
  check_index_select<int64_t>(transposed(m.view), 1, index.view);
  // A strided index (every other element of a buffer).
  auto wide_index = tensor_of<int64_t>({6}, {1, 99, 0, 99, 7, 99});
  View strided_index = wide_index.view;
  strided_index.shape = {3};
  strided_index.strides = {2};
  check_index_select<int64_t>(m.view, 0, strided_index);
}

TEST(CpuIndexing, IndexSelectEmbeddingRowsThreaded) {
  std::mt19937 rng(51);
  auto table = random_tensor<float>({1000, 64}, rng);
  auto index = random_indices({8192}, 1000, rng);
  check_index_select<float>(table.view, 0, index.view);
}

TEST(CpuIndexing, BadIndexThrowsWithValueAndRange) {
  std::mt19937 rng(52);
  auto in = random_tensor<float>({4, 3}, rng);
  auto out = filled_tensor<float>({2, 3}, 0.0);
  auto index = tensor_of<int64_t>({2}, {1, 4});
  std::string msg =
      error_message([&] { kernel_for<kernel::IndexSelect>(DeviceType::CPU)(out.view, in.view, 0, index.view); });
  EXPECT_NE(msg.find("index_select"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size 4"), std::string::npos) << msg;

  auto negative = tensor_of<int64_t>({2}, {-1, 0});
  msg = error_message([&] { kernel_for<kernel::IndexSelect>(DeviceType::CPU)(out.view, in.view, 0, negative.view); });
  EXPECT_NE(msg.find("-1"), std::string::npos) << msg;

  // scatter_add with a bad index leaves the output untouched.
  auto acc = filled_tensor<float>({4, 3}, 5.0);
  auto src = random_tensor<float>({2, 3}, rng);
  auto bad = tensor_of<int64_t>({2, 3}, {0, 1, 2, 3, 7, 0});
  msg = error_message(
      [&] { kernel_for<kernel::Scatter>(DeviceType::CPU)(acc.view, 0, bad.view, src.view, ScatterReduce::Add); });
  EXPECT_NE(msg.find("scatter_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("7"), std::string::npos) << msg;
  for (float v : acc.storage) EXPECT_EQ(v, 5.0f);

  msg = error_message([&] {
    kernel_for<kernel::Gather>(DeviceType::CPU)(out.view, in.view, 1,
                                                tensor_of<int64_t>({2, 3}, {0, 1, 2, 3, 0, 0}).view);
  });
  EXPECT_NE(msg.find("gather"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3"), std::string::npos) << msg;

  auto add_src = random_tensor<float>({2, 3}, rng);
  msg = error_message([&] {
    kernel_for<kernel::IndexAdd>(DeviceType::CPU)(acc.view, 0, tensor_of<int64_t>({2}, {0, 4}).view, add_src.view);
  });
  EXPECT_NE(msg.find("index_add"), std::string::npos) << msg;

  auto int32_index = filled_tensor<int32_t>({2}, 0.0);
  msg =
      error_message([&] { kernel_for<kernel::IndexSelect>(DeviceType::CPU)(out.view, in.view, 0, int32_index.view); });
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
}

template <typename T> void check_index_add(const Shape& out_shape, int dim, int64_t n_index, double tol) {
  std::mt19937 rng(53);
  auto out = random_tensor<T>(out_shape, rng);
  const std::vector<double> before = values(out.view);
  Shape src_shape = out_shape;
  src_shape[dim] = n_index;
  auto src = random_tensor<T>(src_shape, rng);
  auto index = random_indices({n_index}, out_shape[dim], rng);
  kernel_for<kernel::IndexAdd>(DeviceType::CPU)(out.view, dim, index.view, src.view);

  std::vector<double> expected = before;
  const Shape strides = contiguous_strides(out_shape);
  for_each_index(src_shape, [&](const Shape& idx) {
    Shape dst = idx;
    dst[dim] = index.storage[idx[dim]];
    expected[offset_of(View{nullptr, kFloat32, out_shape, strides}, dst)] += at(src.view, idx);
  });
  expect_close(values(out.view), expected, tol, tol, "index_add dim " + std::to_string(dim));
}

TEST(CpuIndexing, IndexAddWithRepeatedIndices) {
  check_index_add<float>({5, 4}, 0, 12, 1e-5);
  check_index_add<float>({5, 4}, 1, 12, 1e-5);
  check_index_add<double>({3, 4, 5}, 1, 30, 1e-12);
  check_index_add<float>({50, 300}, 0, 1000, 1e-4);  // embedding backward shape, threaded
  check_index_add<Half>({6, 8}, 0, 10, 2e-2);
}

TEST(CpuIndexing, GatherEveryDimWithSmallerIndex) {
  std::mt19937 rng(54);
  auto in = random_tensor<float>({5, 6, 7}, rng);
  for (int dim = 0; dim < 3; ++dim) {
    Shape index_shape = {4, 5, 6};  // smaller than in along every dim
    index_shape[dim] = 9;  // and longer along the gathered one
    auto index = random_indices(index_shape, in.view.shape[dim], rng);
    auto out = filled_tensor<float>(index_shape);
    kernel_for<kernel::Gather>(DeviceType::CPU)(out.view, in.view, dim, index.view);
    std::vector<double> expected;
    for_each_index(index_shape, [&](const Shape& idx) {
      Shape src = idx;
      src[dim] = static_cast<int64_t>(at(index.view, idx));
      expected.push_back(at(in.view, src));
    });
    EXPECT_EQ(values(out.view), expected) << "gather dim " << dim;
  }
  // Cross-entropy style: pick one class per row from transposed logits.
  auto logits = random_tensor<double>({10, 4}, rng);
  const View t = transposed(logits.view);  // [4, 10]
  auto picks = tensor_of<int64_t>({4, 1}, {9, 0, 5, 5});
  auto out = filled_tensor<double>({4, 1});
  kernel_for<kernel::Gather>(DeviceType::CPU)(out.view, t, 1, picks.view);
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(out.storage[r], at(t, {r, picks.storage[r]}));
}

TEST(CpuIndexing, ScatterAddAccumulatesDuplicates) {
  std::mt19937 rng(55);
  for (int dim = 0; dim < 2; ++dim) {
    const Shape out_shape = {6, 7};
    Shape index_shape = {5, 6};
    index_shape[dim] = 20;  // many more sources than targets: duplicates
    auto out = random_tensor<double>(out_shape, rng);
    auto src = random_tensor<double>({index_shape[0] + 1, index_shape[1] + 2}, rng);  // bigger than index
    auto index = random_indices(index_shape, out_shape[dim], rng);
    std::vector<double> expected = values(out.view);
    for_each_index(index_shape, [&](const Shape& idx) {
      Shape dst = idx;
      dst[dim] = static_cast<int64_t>(at(index.view, idx));
      expected[dst[0] * 7 + dst[1]] += at(src.view, idx);
    });
    kernel_for<kernel::Scatter>(DeviceType::CPU)(out.view, dim, index.view, src.view, ScatterReduce::Add);
    expect_close(values(out.view), expected, 1e-12, 1e-12, "scatter_add dim " + std::to_string(dim));
  }
  // Large and threaded, into a transposed output.
  auto out_store = filled_tensor<float>({64, 1000}, 0.0);
  const View out = transposed(out_store.view);  // [1000, 64]
  auto src = random_tensor<float>({1000, 300}, rng);
  auto index = random_indices({1000, 300}, 64, rng);
  kernel_for<kernel::Scatter>(DeviceType::CPU)(out, 1, index.view, src.view, ScatterReduce::Add);
  std::vector<double> expected(1000 * 64, 0.0);
  for (int64_t i = 0; i < 1000; ++i)
    for (int64_t j = 0; j < 300; ++j) expected[i * 64 + index.storage[i * 300 + j]] += src.storage[i * 300 + j];
  expect_close(values(out), expected, 1e-4, 1e-5, "large scatter_add");
}

}  // namespace
}  // namespace anvil::test
