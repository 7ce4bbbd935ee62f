// layer_norm on CUDA against the CPU backend: forward (output, mean, rstd),
// backward (grad_in, grad_weight, grad_bias) over the warp-per-row and
// block-per-row paths, with and without affine parameters, every floating
// dtype, odd and empty shapes, strided input; the parameter gradients are
// deterministic (bit-identical across runs).
#include <gtest/gtest.h>

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
  return {1e-9, 1e-11};
}

struct Result {
  Tensor out, mean, rstd, gx, gw, gb;
};

Result run(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g, DeviceType where) {
  const int64_t cols = x.shape().back(), rows = x.numel() / std::max<int64_t>(cols, 1);
  Runtime& be = runtime_for(where);
  Result r;
  r.out = empty(x.shape(), x.options());
  r.mean = empty({rows}, x.options().dtype(kFloat32));
  r.rstd = empty({rows}, x.options().dtype(kFloat32));
  const View wv = w.defined() ? w.view_of() : View{}, bv = b.defined() ? b.view_of() : View{};
  kernel_for<kernel::LayerNorm>(be.type())(r.out.view_of(), r.mean.view_of(), r.rstd.view_of(), x.view_of(),
                                           w.defined() ? &wv : nullptr, b.defined() ? &bv : nullptr, 1e-5);
  r.gx = empty(x.shape(), x.options());
  r.gw = empty({cols}, x.options().dtype(w.defined() ? w.dtype() : kFloat32));
  r.gb = empty({cols}, x.options().dtype(w.defined() ? w.dtype() : kFloat32));
  const View gwv = r.gw.view_of(), gbv = r.gb.view_of();
  kernel_for<kernel::LayerNormBackward>(be.type())(r.gx.view_of(), &gwv, &gbv, g.view_of(), x.view_of(),
                                                   r.mean.view_of(), r.rstd.view_of(), w.defined() ? &wv : nullptr);
  return r;
}

void compare(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g) {
  const Result c = run(x, w, b, g, DeviceType::CPU);
  const Result d = run(x.cuda(), w.defined() ? w.cuda() : w, b.defined() ? b.cuda() : b, g.cuda(), DeviceType::CUDA);
  const DType dt = x.dtype();
  const std::string where = "dtype " + std::string(dtype_name(dt)) + ", shape " + x.shape_str();
  EXPECT_TRUE(all_close(d.out, c.out, tol(dt))) << "out, " << where;
  EXPECT_TRUE(all_close(d.mean, c.mean, {1e-5, 1e-5})) << "mean, " << where;
  EXPECT_TRUE(all_close(d.rstd, c.rstd, {1e-4, 1e-5})) << "rstd, " << where;
  EXPECT_TRUE(all_close(d.gx, c.gx, tol(dt))) << "grad_in, " << where;
  // Column sums over many rows: a looser absolute bound for the 16-bit types.
  const int64_t rows = x.numel() / std::max<int64_t>(x.shape().back(), 1);
  test::Tolerance sum_tol = tol(w.defined() ? w.dtype() : kFloat32);
  sum_tol.atol *= std::sqrt(static_cast<double>(std::max<int64_t>(rows, 1)));
  EXPECT_TRUE(all_close(d.gw, c.gw, sum_tol)) << "grad_weight, " << where;
  EXPECT_TRUE(all_close(d.gb, c.gb, sum_tol)) << "grad_bias, " << where;
}

TEST(CudaLayerNorm, AllPathsAllDtypes) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int64_t cols : {1, 3, 64, 768, 1000, 1025, 4097, 9000}) {
      const int64_t rows = cols > 4096 ? 3 : 67;
      const Tensor x = random_tensor({rows, cols}, dt, cols) * 2.0 + 0.5;
      const Tensor w = random_tensor({cols}, dt, cols + 1), b = random_tensor({cols}, dt, cols + 2);
      const Tensor g = random_tensor({rows, cols}, dt, cols + 3);
      compare(x, w, b, g);
    }
}

TEST(CudaLayerNorm, NoAffineMixedWeightDtypeStridedAndEmpty) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 5, 33}, kFloat32, 1), g = random_tensor({2, 5, 33}, kFloat32, 2);
  compare(x, Tensor(), Tensor(), g);
  // bfloat16 activations with float32 parameters (mixed precision).
  compare(x.to(kBFloat16), random_tensor({33}, kFloat32, 3), random_tensor({33}, kFloat32, 4), g.to(kBFloat16));
  // Strided input: the op gathers it.
  const Tensor base = random_tensor({40, 12}, kFloat32, 5);
  const Tensor w = random_tensor({40}, kFloat32, 6), b = random_tensor({40}, kFloat32, 7);
  EXPECT_CUDA_CLOSE(layer_norm(base.cuda().transpose(0, 1), {40}, w.cuda(), b.cuda()),
                    layer_norm(base.transpose(0, 1), {40}, w, b), tol(kFloat32));
  // No rows.
  const Tensor none = empty({0, 16}).cuda();
  EXPECT_EQ(layer_norm(none, {16}).numel(), 0);
}

TEST(CudaLayerNorm, ParameterGradientsAreDeterministic) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({4099, 257}, kFloat32, 8).cuda(), g = random_tensor({4099, 257}, kFloat32, 9).cuda();
  const Tensor w = random_tensor({257}, kFloat32, 10).cuda();
  const Result a = run(x, w, Tensor(), g, DeviceType::CUDA), b = run(x, w, Tensor(), g, DeviceType::CUDA);
  EXPECT_TRUE(all_close(a.gw, b.gw, {0, 0}));
  EXPECT_TRUE(all_close(a.gb, b.gb, {0, 0}));
}

TEST(CudaLayerNorm, AutogradMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 4, 100}, kFloat32, 11);
  const Tensor w = random_tensor({100}, kFloat32, 12), b = random_tensor({100}, kFloat32, 13);
  const Tensor g = random_tensor({3, 4, 100}, kFloat32, 14);
  Tensor xc = x.clone().requires_grad_(), wc = w.clone().requires_grad_(), bc = b.clone().requires_grad_();
  Tensor xg = x.cuda().requires_grad_(), wg = w.cuda().requires_grad_(), bg = b.cuda().requires_grad_();
  layer_norm(xc, {100}, wc, bc).backward(g);
  layer_norm(xg, {100}, wg, bg).backward(g.cuda());
  EXPECT_CUDA_CLOSE(xg.grad(), xc.grad(), tol(kFloat32));
  EXPECT_CUDA_CLOSE(wg.grad(), wc.grad(), {1e-4, 1e-4});
  EXPECT_CUDA_CLOSE(bg.grad(), bc.grad(), {1e-4, 1e-4});
}

TEST(CudaLayerNorm, FusedAddLayerNormMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int64_t cols : {1, 3, 768, 1025, 9000}) {
      const int64_t rows = cols > 4096 ? 3 : 41;
      const Tensor x = random_tensor({rows, cols}, dt, cols), r = random_tensor({rows, cols}, dt, cols + 1);
      const Tensor w = random_tensor({cols}, dt, cols + 2), b = random_tensor({cols}, dt, cols + 3);
      const auto want = add_layer_norm(x, r, {cols}, w, b);
      const auto got = add_layer_norm(x.cuda(), r.cuda(), {cols}, w.cuda(), b.cuda());
      EXPECT_TRUE(all_close(got.sum, want.sum, {0, 0})) << "sum, " << dt << " cols " << cols;
      EXPECT_TRUE(all_close(got.out, want.out, tol(dt))) << "out, " << dt << " cols " << cols;
    }
  // Gradients through both outputs, on the strided path too.
  const Tensor x = random_tensor({6, 50}, kFloat32, 1), r = random_tensor({50, 6}, kFloat32, 2).transpose(0, 1);
  Tensor xc = x.clone().requires_grad_(), rc = r.clone().requires_grad_();
  Tensor xg = x.cuda().requires_grad_(), rg = r.contiguous().cuda().requires_grad_();
  const auto c = add_layer_norm(xc, rc, {50}),
             g = add_layer_norm(xg, rg.transpose(0, 1).contiguous().transpose(0, 1), {50});
  (c.sum.sum() + (c.out * c.out).sum()).backward();
  (g.sum.sum() + (g.out * g.out).sum()).backward();
  EXPECT_CUDA_CLOSE(xg.grad(), xc.grad(), tol(kFloat32));
  EXPECT_CUDA_CLOSE(rg.grad(), rc.grad(), tol(kFloat32));
}

}  // namespace
}  // namespace anvil
