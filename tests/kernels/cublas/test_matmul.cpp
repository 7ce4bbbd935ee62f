// kernel::Matmul (cuBLASLt) against the CPU backend: odd shapes,
// transposed and non-contiguous operands, broadcast batches, alpha/beta,
// every floating dtype, TF32 on/off, and the gradients of linear.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/runtime.h"
#include "kernels/matmul_settings.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;
using test::Tolerance;

Runtime& cpu_backend() { return runtime_for(DeviceType::CPU); }
Runtime& cuda_backend() { return runtime_for(DeviceType::CUDA); }

// The per-dtype tolerance with the absolute part grown with K: both sides
// round their K-term sums in a different order. For N(0,1) inputs the
// partial sums grow like sqrt(K) and each of the K additions rounds at that
// size, so two float32 orders drift apart like eps * sqrt(K) * sqrt(K)
// (seen on an H100 against oneDNN on the CPU: 9.9e-5 at K = 1024, where the
// old sqrt(K) * 1e-6 bound was 3.2e-5). Twice the float32 epsilon times K
// bounds that with margin; a wrong element is off by O(1).
Tolerance matmul_tolerance(DType dtype, int64_t k) {
  Tolerance t = test::tolerance_for(dtype);
  const double kk = static_cast<double>(std::max<int64_t>(k, 1));
  t.atol *= std::sqrt(kk);
  if (dtype == kFloat32) t.atol = std::max(t.atol, 2 * std::numeric_limits<float>::epsilon() * kk);
  return t;
}

// Builds the operand views on a device from CPU base tensors (so strided
// views have the same strides on both sides) and compares
// out = alpha * a @ b + beta * out between the two backends.
using MakeView = std::function<Tensor(const Tensor&)>;
Tensor identity(const Tensor& t) { return t; }

void expect_matmul_matches(const Tensor& a_base, const MakeView& make_a, const Tensor& b_base, const MakeView& make_b,
                           const Tensor& out_base, const MakeView& make_out, MatmulParams p, Tolerance tol) {
  Tensor a_cpu = make_a(a_base), b_cpu = make_b(b_base);
  Tensor out_cpu_storage = out_base.clone();
  Tensor out_cpu = make_out(out_cpu_storage);
  kernel_for<kernel::Matmul>(cpu_backend().type())(out_cpu.view_of(), a_cpu.view_of(), b_cpu.view_of(), p);

  Tensor a_cuda = make_a(a_base.cuda()), b_cuda = make_b(b_base.cuda());
  Tensor out_cuda_storage = out_base.cuda();
  Tensor out_cuda = make_out(out_cuda_storage);
  kernel_for<kernel::Matmul>(cuda_backend().type())(out_cuda.view_of(), a_cuda.view_of(), b_cuda.view_of(), p);
  // The whole storage: entries outside a strided out must stay untouched.
  EXPECT_CUDA_CLOSE(out_cuda_storage, out_cpu_storage, tol);
}

void expect_plain_matmul(int64_t batch, int64_t m, int64_t n, int64_t k, DType dtype, uint64_t seed,
                         MatmulParams p = {}) {
  SCOPED_TRACE(::testing::Message() << "batch " << batch << ", m " << m << ", n " << n << ", k " << k << ", "
                                    << dtype_name(dtype) << ", alpha " << p.alpha << ", beta " << p.beta);
  Tensor a = random_tensor({batch, m, k}, dtype, seed);
  Tensor b = random_tensor({batch, k, n}, dtype, seed + 1);
  Tensor out = random_tensor({batch, m, n}, dtype, seed + 2);
  expect_matmul_matches(a, identity, b, identity, out, identity, p, matmul_tolerance(dtype, k));
}

TEST(CublasMatmul, OddShapesFloat32) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (int64_t m : {1, 7, 129, 1000})
    for (int64_t n : {1, 7, 129})
      for (int64_t k : {1, 7, 129, 1000}) expect_plain_matmul(1, m, n, k, kFloat32, seed++);
  expect_plain_matmul(1, 129, 1000, 7, kFloat32, seed++);
}

TEST(CublasMatmul, EveryFloatingDtype) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    expect_plain_matmul(1, 129, 7, 1000, dtype, seed++);
    expect_plain_matmul(3, 64, 128, 96, dtype, seed++);
    expect_plain_matmul(2, 1, 1, 1, dtype, seed++);
  }
}

TEST(CublasMatmul, AlphaBeta) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 200;
  for (DType dtype : {kFloat32, kFloat16, kFloat64}) {
    expect_plain_matmul(2, 33, 17, 65, dtype, seed++, MatmulParams{0.5f, 0.0f});
    expect_plain_matmul(2, 33, 17, 65, dtype, seed++, MatmulParams{1.0f, 1.0f});
    expect_plain_matmul(1, 33, 17, 65, dtype, seed++, MatmulParams{-2.0f, 0.25f});
  }
}

TEST(CublasMatmul, EmptyInnerDimScalesOutput) {
  ANVIL_SKIP_WITHOUT_GPU();
  expect_plain_matmul(2, 5, 3, 0, kFloat32, 300, MatmulParams{1.0f, 0.0f});
  expect_plain_matmul(2, 5, 3, 0, kFloat32, 301, MatmulParams{1.0f, 0.5f});
  expect_plain_matmul(2, 5, 3, 0, kFloat16, 302, MatmulParams{1.0f, 1.0f});
}

TEST(CublasMatmul, TransposedOperandsAndOutputs) {
  ANVIL_SKIP_WITHOUT_GPU();
  const int64_t batch = 3, m = 37, n = 45, k = 129;
  uint64_t seed = 400;
  auto t12 = [](const Tensor& t) { return t.transpose(1, 2); };
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tolerance tol = matmul_tolerance(dtype, k);
    Tensor a = random_tensor({batch, m, k}, dtype, seed++), a_t = random_tensor({batch, k, m}, dtype, seed++);
    Tensor b = random_tensor({batch, k, n}, dtype, seed++), b_t = random_tensor({batch, n, k}, dtype, seed++);
    Tensor out = random_tensor({batch, m, n}, dtype, seed++), out_t = random_tensor({batch, n, m}, dtype, seed++);
    expect_matmul_matches(a_t, t12, b, identity, out, identity, {}, tol);  // a^T
    expect_matmul_matches(a, identity, b_t, t12, out, identity, {}, tol);  // b^T
    expect_matmul_matches(a_t, t12, b_t, t12, out, identity, {}, tol);  // both
    expect_matmul_matches(a, identity, b, identity, out_t, t12, {1.0f, 0.5f}, tol);  // column-major out
    expect_matmul_matches(a_t, t12, b_t, t12, out_t, t12, {}, tol);
  }
}

TEST(CublasMatmul, NonContiguousOperands) {
  ANVIL_SKIP_WITHOUT_GPU();
  const int64_t batch = 2, m = 19, n = 23, k = 31;
  uint64_t seed = 500;
  for (DType dtype : {kFloat32, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tolerance tol = matmul_tolerance(dtype, k);
    // Padded rows (ld > cols): slices of wider matrices.
    Tensor a_wide = random_tensor({batch, m, k + 9}, dtype, seed++);
    Tensor b_wide = random_tensor({batch, k, n + 5}, dtype, seed++);
    Tensor out_wide = random_tensor({batch, m, n + 3}, dtype, seed++);
    auto narrow_last = [](int64_t len) { return [len](const Tensor& t) { return t.narrow(2, 0, len); }; };
    expect_matmul_matches(a_wide, narrow_last(k), b_wide, narrow_last(n), out_wide, narrow_last(n), {1.0f, 1.0f}, tol);
    // Every other column: no unit stride in either matrix dim, copied first.
    Tensor a_step = random_tensor({batch, m, 2 * k}, dtype, seed++);
    Tensor out_step = random_tensor({batch, m, 2 * n}, dtype, seed++);
    auto every_other = [](const Tensor& t) { return t.slice(2, 0, t.size(2), 2); };
    expect_matmul_matches(a_step, every_other, b_wide, narrow_last(n), out_step, every_other, {1.0f, 0.5f}, tol);
    // Batch dims out of order: permuted [M, B, K] storage.
    Tensor a_perm = random_tensor({m, batch, k}, dtype, seed++);
    auto batch_first = [](const Tensor& t) { return t.permute({1, 0, 2}); };
    expect_matmul_matches(a_perm, batch_first, b_wide, narrow_last(n), out_wide, narrow_last(n), {}, tol);
  }
}

TEST(CublasMatmul, BroadcastBatch) {
  ANVIL_SKIP_WITHOUT_GPU();
  const int64_t batch = 4, m = 33, n = 20, k = 50;
  uint64_t seed = 600;
  for (DType dtype : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tolerance tol = matmul_tolerance(dtype, k);
    Tensor a = random_tensor({batch, m, k}, dtype, seed++), b = random_tensor({batch, k, n}, dtype, seed++);
    Tensor a1 = random_tensor({1, m, k}, dtype, seed++), b1 = random_tensor({1, k, n}, dtype, seed++);
    Tensor out = random_tensor({batch, m, n}, dtype, seed++);
    auto expand = [batch](const Tensor& t) { return t.expand({batch, -1, -1}); };
    auto expand_t = [batch](const Tensor& t) { return t.expand({batch, -1, -1}).transpose(1, 2); };
    expect_matmul_matches(a, identity, b1, expand, out, identity, {}, tol);  // shared weight (one tall GEMM)
    expect_matmul_matches(a1, expand, b, identity, out, identity, {}, tol);  // shared left operand
    expect_matmul_matches(a1, expand, b1, expand, out, identity, {1.0f, 1.0f}, tol);
    Tensor b1_t = random_tensor({1, n, k}, dtype, seed++);
    expect_matmul_matches(a, identity, b1_t, expand_t, out, identity, {}, tol);  // shared transposed weight
  }
}

TEST(CublasMatmul, TwoDimensionalViews) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor a = random_tensor({65, 130}, kFloat32, 700), b = random_tensor({130, 7}, kFloat32, 701);
  Tensor out = random_tensor({65, 7}, kFloat32, 702);
  expect_matmul_matches(a, identity, b, identity, out, identity, {}, matmul_tolerance(kFloat32, 130));
}

TEST(CublasMatmul, Tf32OnlyWhenAllowed) {
  ANVIL_SKIP_WITHOUT_GPU();
  ASSERT_FALSE(matmul_allow_tf32()) << "TF32 must be off by default";
  const int64_t k = 1024;
  Tensor a = random_tensor({256, k}, kFloat32, 800), b = random_tensor({k, 256}, kFloat32, 801);
  Tensor want = matmul(a, b);
  EXPECT_CUDA_CLOSE(matmul(a.cuda(), b.cuda()), want, matmul_tolerance(kFloat32, k));
  set_matmul_allow_tf32(true);
  Tensor tf32 = matmul(a.cuda(), b.cuda());
  set_matmul_allow_tf32(false);
  // TF32 keeps 10 mantissa bits: ~1e-3 relative per product.
  EXPECT_CUDA_CLOSE(tf32, want, Tolerance{5e-3, 5e-3 * std::sqrt(static_cast<double>(k))});
}

TEST(CublasMatmul, MatmulOpAndGradients) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor a = random_tensor({3, 17, 29}, dtype, 900), b = random_tensor({29, 11}, dtype, 901);
    Tensor g = random_tensor({3, 17, 11}, dtype, 902);
    auto run = [&](Device d) {
      Tensor x = a.to(d).detach().requires_grad_(), w = b.to(d).detach().requires_grad_();
      Tensor y = matmul(x, w);
      sum(y * g.to(d)).backward();
      return std::vector<Tensor>{y, x.grad(), w.grad()};
    };
    const std::vector<Tensor> want = run(Device::cpu()), got = run(Device::cuda(0));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_CUDA_CLOSE(got[i], want[i], matmul_tolerance(dtype, 64));
  }
}

// With the GEMM ladder switched on, matmul goes to the hand-written GEMM where
// it applies (and to cuBLASLt where it does not); results stay the same.
TEST(CublasMatmul, GemmLadderRouteMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const bool was = matmul_use_gemm_ladder();
  set_matmul_use_gemm_ladder(true);
  uint64_t seed = 1200;
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    expect_plain_matmul(1, 256, 128, 64, dtype, seed++);
    expect_plain_matmul(2, 129, 7, 33, dtype, seed++, MatmulParams{0.5f, 1.0f});
  }
  set_matmul_use_gemm_ladder(was);
}

// linear on CUDA fuses the bias into the cuBLASLt epilogue; its forward and
// all three gradients must match the CPU's matmul + add.
TEST(CublasLinear, FusedBiasForwardAndGradients) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (bool with_bias : {true, false}) {
      for (const Shape& x_shape : {Shape{4, 7, 129}, Shape{1, 33}, Shape{1000, 64}}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << ", bias " << with_bias << ", rank " << x_shape.size()
                                          << ", in_features " << x_shape.back());
        const int64_t in_f = x_shape.back(), out_f = 37;
        Tensor x = random_tensor(x_shape, dtype, seed++), w = random_tensor({out_f, in_f}, dtype, seed++);
        Tensor b = random_tensor({out_f}, dtype, seed++);
        Shape y_shape = x_shape;
        y_shape.back() = out_f;
        Tensor g = random_tensor(y_shape, dtype, seed++);
        auto run = [&](Device d) {
          Tensor xd = x.to(d).detach().requires_grad_(), wd = w.to(d).detach().requires_grad_();
          Tensor bd = with_bias ? b.to(d).detach().requires_grad_() : Tensor();
          Tensor y = linear(xd, wd, bd);
          sum(y * g.to(d)).backward();
          return std::vector<Tensor>{y, xd.grad(), wd.grad(), with_bias ? bd.grad() : Tensor()};
        };
        const std::vector<Tensor> want = run(Device::cpu()), got = run(Device::cuda(0));
        EXPECT_CUDA_CLOSE(got[0], want[0], matmul_tolerance(dtype, in_f)) << "output";
        EXPECT_CUDA_CLOSE(got[1], want[1], matmul_tolerance(dtype, out_f)) << "grad input";
        EXPECT_CUDA_CLOSE(got[2], want[2], matmul_tolerance(dtype, x.numel() / in_f)) << "grad weight";
        if (with_bias) {
          EXPECT_CUDA_CLOSE(got[3], want[3], matmul_tolerance(dtype, x.numel() / in_f)) << "grad bias";
        }
      }
    }
  }
}

TEST(CublasLinear, BackendLinearWithStridedOperands) {
  ANVIL_SKIP_WITHOUT_GPU();
  // A transposed weight ([in_f, out_f] storage) and a padded input.
  Tensor x_wide = random_tensor({50, 40}, kFloat32, 1100), w_t = random_tensor({32, 21}, kFloat32, 1101);
  Tensor b_wide = random_tensor({42}, kFloat32, 1102);
  auto make = [](const Tensor& xw, const Tensor& wt, const Tensor& bw) {
    return std::vector<Tensor>{xw.narrow(1, 0, 32), wt.t(), bw.slice(0, 0, 42, 2)};
  };
  const std::vector<Tensor> cpu_ops = make(x_wide, w_t, b_wide);
  const std::vector<Tensor> gpu_ops = make(x_wide.cuda(), w_t.cuda(), b_wide.cuda());
  Tensor want = zeros({50, 21}), got = zeros({50, 21}).cuda();
  const View cpu_bias = cpu_ops[2].view_of(), gpu_bias = gpu_ops[2].view_of();
  kernel_for<kernel::Linear>(cpu_backend().type())(want.view_of(), cpu_ops[0].view_of(), cpu_ops[1].view_of(),
                                                   &cpu_bias);
  kernel_for<kernel::Linear>(cuda_backend().type())(got.view_of(), gpu_ops[0].view_of(), gpu_ops[1].view_of(),
                                                    &gpu_bias);
  EXPECT_CUDA_CLOSE(got, want, matmul_tolerance(kFloat32, 32));
}

}  // namespace
}  // namespace anvil
