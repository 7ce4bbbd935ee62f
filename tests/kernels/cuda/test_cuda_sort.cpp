// The CUDA sort (kernels/cuda/sort.cu) against the CPU backend: both sorts
// are stable and put NaN where PyTorch does, so values and indices must agree
// exactly: rows in shared memory (short, a power of two, padded), rows long
// enough for the global-memory path, the scan dim inside, strided views,
// every dtype, both directions; and topk, argsort and the gradient on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

constexpr DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

// Random values with ties (integers: a small range) and, for floats, NaN and infinities.
Tensor sort_input(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor x = test::random_tensor(shape, kFloat64, seed);
  x = is_floating(dtype) ? round(x * 4.0) / 4.0 : round(x * 3.0);
  if (is_floating(dtype) && x.numel() >= 5) {
    Tensor flat = x.view({-1});
    flat.narrow(0, 1, 1).fill_(NAN);
    flat.narrow(0, 3, 1).fill_(INFINITY);
    flat.narrow(0, 4, 1).fill_(-INFINITY);
    flat.narrow(0, flat.numel() - 1, 1).fill_(NAN);
  }
  return x.to(dtype);
}

void check(const Tensor& x, int64_t dim, bool descending) {
  Tensor want_v = empty(x.shape(), x.options()), want_i = empty(x.shape(), kInt64);
  kernel_for<kernel::Sort>(DeviceType::CPU)(want_v.view_of(), want_i.view_of(), x.view_of(), dim, {descending, true});
  const Tensor xd = x.cuda();
  Tensor got_v = empty(x.shape(), xd.options()), got_i = empty(x.shape(), xd.options().dtype(kInt64));
  kernel_for<kernel::Sort>(DeviceType::CUDA)(got_v.view_of(), got_i.view_of(), xd.view_of(), dim, {descending, true});
  const std::string what = std::string("sort ") + dtype_name(x.dtype()) + " shape " + test::shape_text(x.shape()) +
                           " dim " + std::to_string(dim) + (descending ? " descending" : " ascending");
  EXPECT_EQ(got_i.to_vector<int64_t>(), want_i.to_vector<int64_t>()) << what;
  EXPECT_TRUE(test::all_close(got_v, want_v, {0, 0})) << what;
}

TEST(CudaSort, SharedMemoryRowsEveryDtypeBothDirections) {
  ANVIL_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<Shape, int64_t>> cases = {{{3, 1}, 1},    {{4, 7}, 1},  {{2, 64}, 1},
                                                        {{2, 1000}, 1}, {{33, 5}, 0}, {{3, 17, 4}, 1}};
  uint64_t seed = 1;
  for (DType dtype : kAllDtypes)
    for (const auto& [shape, dim] : cases)
      for (bool descending : {false, true}) check(sort_input(shape, dtype, ++seed), dim, descending);
}

TEST(CudaSort, LongRowsTakeTheGlobalMemoryPath) {
  ANVIL_SKIP_WITHOUT_GPU();
  // float32: 12 bytes a slot, so rows past 2048 elements (padded to 4096) leave shared memory.
  const int64_t n = test::emulated_gpu() ? 3000 : 70000;
  check(sort_input({2, n}, kFloat32, 90), 1, false);
  check(sort_input({n, 2}, kFloat64, 91), 0, true);
  check(sort_input({1, n}, kInt64, 92), 1, true);
}

TEST(CudaSort, StridedViewsTopkArgsortAndGradients) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = test::random_tensor({30, 12}, kFloat64, 8).t();  // [12, 30], strided
  auto [v, i] = sort(x.cuda(), 1, true);
  auto [wv, wi] = sort(x, 1, true);
  EXPECT_EQ(i.to_vector<int64_t>(), wi.to_vector<int64_t>());
  EXPECT_EQ(v.to_vector<double>(), wv.to_vector<double>());
  EXPECT_EQ(argsort(x.cuda(), 0).to_vector<int64_t>(), argsort(x, 0).to_vector<int64_t>());
  auto [tv, ti] = topk(x.cuda(), 5, 1, false);
  EXPECT_EQ(ti.to_vector<int64_t>(), topk(x, 5, 1, false).second.to_vector<int64_t>());
  EXPECT_EQ(tv.device(), Device::cuda(0));
  // The gradient scatters back on the device as on the CPU.
  const Tensor g = test::random_tensor({12, 3}, kFloat64, 9);
  Tensor grads[2];
  int k = 0;
  for (const Tensor& base : {x, x.cuda()}) {
    Tensor leaf = base.detach().requires_grad_(true);
    (topk(leaf, 3, 1).first * g.to(base.device())).sum().backward();
    grads[k++] = leaf.grad();
  }
  EXPECT_EQ(grads[1].to_vector<double>(), grads[0].to_vector<double>());
}

}  // namespace
}  // namespace anvil
