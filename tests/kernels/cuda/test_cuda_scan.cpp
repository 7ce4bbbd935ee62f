// The CUDA scan kernels (kernels/cuda/scan.cu) against the CPU backend: the
// block-per-row parallel scan (rows shorter than a block, one chunk, many
// chunks), the column kernel (the scan dim not last), strided views, every
// dtype each scan takes, and the ops' gradients on the device.
#include <gtest/gtest.h>

#include <string>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;

constexpr DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

// CPU sums in double, CUDA in float: float32 gets an absolute allowance for
// running sums that cancel near zero.
test::Tolerance scan_tol(DType d, ScanOp op) {
  if (d == kFloat32) return op == ScanOp::Prod ? test::Tolerance{2e-4, 1e-6} : test::Tolerance{1e-5, 2e-4};
  if (d == kFloat16) return {4e-3, 4e-3};
  if (d == kBFloat16) return {2e-2, 2e-2};
  return test::tolerance_for(d);
}

// Values that keep products bounded (in [0.9, 1.1], or small integers).
Tensor scan_input(const Shape& shape, DType dtype, ScanOp op, uint64_t seed) {
  if (op == ScanOp::Prod && is_floating(dtype)) return test::random_uniform_tensor(shape, dtype, 0.9, 1.1, seed);
  return test::random_tensor(shape, dtype, seed);
}

void check(ScanOp op, const Tensor& x, int64_t dim) {
  Tensor want = empty(x.shape(), x.options());
  kernel_for<kernel::Scan>(DeviceType::CPU)(op, want.view_of(), x.view_of(), dim);
  const Tensor xd = x.cuda();
  Tensor got = empty(x.shape(), xd.options());
  kernel_for<kernel::Scan>(DeviceType::CUDA)(op, got.view_of(), xd.view_of(), dim);
  EXPECT_TRUE(all_close(got, want, scan_tol(x.dtype(), op)))
      << ops::scan_name(op) << " " << x.dtype() << " shape " << test::shape_text(x.shape()) << " dim " << dim;
}

TEST(CudaScan, EveryPathEveryDtype) {
  ANVIL_SKIP_WITHOUT_GPU();
  // [rows, n] along the last dim: n = 1, 5 (< a warp), 256 (one chunk), 700 (three chunks);
  // then the column kernel (dim 0 of [n, 6]) and dim 1 of a 3-D tensor.
  const std::vector<std::pair<Shape, int64_t>> cases = {{{3, 1}, 1},   {{4, 5}, 1},  {{2, 256}, 1},
                                                        {{3, 700}, 1}, {{37, 6}, 0}, {{2, 9, 5}, 1}};
  uint64_t seed = 1;
  for (ScanOp op : {ScanOp::Sum, ScanOp::Prod, ScanOp::LogSumExp}) {
    for (DType dtype : kAllDtypes) {
      if (op == ScanOp::LogSumExp && !is_floating(dtype)) continue;
      if (dtype == kBool && op != ScanOp::Sum) continue;  // core converts bool to int64 first
      for (const auto& [shape, dim] : cases) check(op, scan_input(shape, dtype, op, ++seed), dim);
    }
  }
}

TEST(CudaScan, StridedViewsAndIntegerResultsThroughTheOps) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = test::random_tensor({40, 300}, kFloat64, 3).t();  // [300, 40], strided
  EXPECT_TRUE(all_close(cumsum(x.cuda(), 0), cumsum(x, 0), test::tolerance_for(kFloat64)));
  EXPECT_TRUE(all_close(logcumsumexp(x.cuda(), 1), logcumsumexp(x, 1), test::tolerance_for(kFloat64)));
  const Tensor b = test::random_tensor({5, 33}, kBool, 4);
  const Tensor got = cumsum(b.cuda(), 1);
  EXPECT_EQ(got.dtype(), kInt64);
  EXPECT_EQ(got.to_vector<int64_t>(), cumsum(b, 1).to_vector<int64_t>());
  const Tensor i = test::random_tensor({7, 6}, kInt32, 5);
  EXPECT_EQ(cumprod(i.cuda(), 0).to_vector<int64_t>(), cumprod(i, 0).to_vector<int64_t>());
}

TEST(CudaScan, GradientsOnTheDeviceMatchTheCpus) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({4, 50}, kFloat64, 6);
  x.view({-1}).narrow(0, 7, 1).fill_(0.0);  // a zero for cumprod's special case
  const Tensor g = test::random_tensor({4, 50}, kFloat64, 7);
  for (int which = 0; which < 3; ++which) {
    Tensor grads[2];
    int k = 0;
    for (const Tensor& base : {x, x.cuda()}) {
      Tensor leaf = base.detach().requires_grad_(true);
      Tensor y = which == 0 ? cumsum(leaf, 1) : which == 1 ? cumprod(leaf, 1) : logcumsumexp(leaf, 1);
      (y * g.to(base.device())).sum().backward();
      grads[k++] = leaf.grad();
    }
    EXPECT_TRUE(all_close(grads[1], grads[0], {1e-9, 1e-10})) << "scan " << which;
  }
}

TEST(CudaScan, RefusesBadArguments) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = zeros({2, 3}, TensorOptions(kInt64).device(Device::cuda(0)));
  Tensor out = empty({2, 3}, TensorOptions(kInt64).device(Device::cuda(0)));
  try {
    kernel_for<kernel::Scan>(DeviceType::CUDA)(ScanOp::LogSumExp, out.view_of(), x.view_of(), 1);
    ADD_FAILURE() << "logcumsumexp of int64 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logcumsumexp: not supported for dtype int64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kernel_for<kernel::Scan>(DeviceType::CUDA)(ScanOp::Sum, out.view_of(), x.view_of(), 2), Error);
}

}  // namespace
}  // namespace anvil
