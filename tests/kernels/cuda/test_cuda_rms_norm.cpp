// rms_norm_backward on CUDA against the CPU backend: grad_in and grad_weight
// over short and long rows, every floating dtype, with and without a weight,
// each gradient alone, no rows; the weight gradient is deterministic; and
// autograd through rms_norm on both devices. (The forward is checked in
// test_cuda_functional.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/runtime.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;

test::Tolerance tol(DType d) {
  if (d == kFloat16) return {4e-3, 4e-3};
  if (d == kBFloat16) return {2e-2, 2e-2};
  if (d == kFloat32) return {1e-4, 1e-5};
  return {1e-10, 1e-12};
}

struct Grads {
  Tensor gx, gw;
};

Grads run(const Tensor& x, const Tensor& w, const Tensor& g, DeviceType where, bool want_gx, bool want_gw) {
  const int64_t cols = x.shape().back();
  Runtime& be = runtime_for(where);
  Grads r;
  if (want_gx) r.gx = empty(x.shape(), x.options());
  if (want_gw) r.gw = empty({cols}, x.options().dtype(w.defined() ? w.dtype() : kFloat32));
  const View wv = w.defined() ? w.view_of() : View{};
  const View gwv = want_gw ? r.gw.view_of() : View{};
  kernel_for<kernel::RmsNormBackward>(be.type())(want_gx ? r.gx.view_of() : View{}, want_gw ? &gwv : nullptr,
                                                 g.view_of(), x.view_of(), w.defined() ? &wv : nullptr, 1e-5);
  return r;
}

void compare(const Tensor& x, const Tensor& w, const Tensor& g, bool want_gx = true, bool want_gw = true) {
  const Grads c = run(x, w, g, DeviceType::CPU, want_gx, want_gw);
  const Grads d = run(x.cuda(), w.defined() ? w.cuda() : w, g.cuda(), DeviceType::CUDA, want_gx, want_gw);
  const DType dt = x.dtype();
  const std::string where = "dtype " + std::string(dtype_name(dt)) + ", shape " + x.shape_str();
  if (want_gx) {
    EXPECT_TRUE(all_close(d.gx, c.gx, tol(dt))) << "grad_in, " << where;
  }
  if (want_gw) {
    // Column sums over many rows: the bound grows with the row count.
    const int64_t rows = x.numel() / std::max<int64_t>(x.shape().back(), 1);
    test::Tolerance sum_tol = tol(w.defined() ? w.dtype() : kFloat32);
    sum_tol.atol *= std::sqrt(static_cast<double>(std::max<int64_t>(rows, 1)));
    EXPECT_TRUE(all_close(d.gw, c.gw, sum_tol)) << "grad_weight, " << where;
  }
}

TEST(CudaRmsNorm, BackwardAllDtypesShortAndLongRows) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int64_t cols : {1, 3, 64, 1000, 4097}) {
      const int64_t rows = cols > 1000 ? 3 : 37;
      const Tensor x = random_tensor({rows, cols}, dt, cols) * 2.0 + 0.5;
      const Tensor w = random_tensor({cols}, dt, cols + 1), g = random_tensor({rows, cols}, dt, cols + 2);
      compare(x, w, g);
      compare(x, Tensor(), g, /*want_gx=*/true, /*want_gw=*/false);
    }
}

TEST(CudaRmsNorm, EachGradientAloneMixedWeightDtypeAndNoRows) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({9, 70}, kFloat32, 1), g = random_tensor({9, 70}, kFloat32, 2);
  const Tensor w = random_tensor({70}, kFloat32, 3);
  compare(x, w, g, /*want_gx=*/false, /*want_gw=*/true);
  compare(x, w, g, /*want_gx=*/true, /*want_gw=*/false);
  // bfloat16 activations with a float32 weight (mixed precision).
  compare(x.to(kBFloat16), w, g.to(kBFloat16));
  // No rows: the weight gradient is zero, as on the CPU.
  const Tensor none = empty({0, 70}), w_none = random_tensor({70}, kFloat32, 4);
  const Grads d = run(none.cuda(), w_none.cuda(), none.cuda(), DeviceType::CUDA, true, true);
  EXPECT_EQ(d.gw.cpu().abs().sum().item<double>(), 0.0);
}

TEST(CudaRmsNorm, WeightGradientIsDeterministic) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({1031, 65}, kFloat32, 5).cuda(), g = random_tensor({1031, 65}, kFloat32, 6).cuda();
  const Tensor w = random_tensor({65}, kFloat32, 7).cuda();
  const Grads a = run(x, w, g, DeviceType::CUDA, false, true), b = run(x, w, g, DeviceType::CUDA, false, true);
  EXPECT_TRUE(all_close(a.gw, b.gw, {0, 0}));
}

TEST(CudaRmsNorm, AutogradMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 4, 100}, kFloat32, 11), w = random_tensor({100}, kFloat32, 12);
  const Tensor g = random_tensor({3, 4, 100}, kFloat32, 14);
  Tensor xc = x.clone().requires_grad_(), wc = w.clone().requires_grad_();
  Tensor xg = x.cuda().requires_grad_(), wg = w.cuda().requires_grad_();
  rms_norm(xc, {100}, wc).backward(g);
  rms_norm(xg, {100}, wg).backward(g.cuda());
  EXPECT_CUDA_CLOSE(xg.grad(), xc.grad(), tol(kFloat32));
  EXPECT_CUDA_CLOSE(wg.grad(), wc.grad(), {1e-4, 1e-4});
}

}  // namespace
}  // namespace anvil
