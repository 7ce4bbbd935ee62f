// kernel::LuFactor / lu_solve (cuSOLVER on a real GPU; the hand-written
// kernels of kernels/cusolver/lu_kernels.cu on the emulated one) against the
// CPU backend (LAPACK), and linalg::solve / inv / det / slogdet and the
// solve gradient on CUDA against the CPU.
#include <gtest/gtest.h>

#include <string>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;

// Random [batch, n, n] with n on the diagonal added: invertible, and no ties
// in the pivot search, so both backends pivot alike.
Tensor invertible(int64_t batch, int64_t n, DType dtype, uint64_t seed) {
  return random_tensor({batch, n, n}, dtype, seed) + eye(n, TensorOptions().dtype(dtype)) * double(n);
}

// The backend's view of a column-major [B, rows, cols] matrix batch held in a
// contiguous [B, cols, rows] tensor.
View lapack_view(const Tensor& storage) {
  View v = storage.view_of();
  const int64_t batch = storage.size(0), cols = storage.size(1), rows = storage.size(2);
  return View{v.data, v.dtype, {batch, rows, cols}, {rows * cols, 1, rows}, v.device_index};
}

struct Factors {
  Tensor lu, pivots, info;
};

Factors factor_on(const Tensor& a_rowmajor_transposed, Device device) {
  Factors f;
  f.lu = a_rowmajor_transposed.to(device).clone();
  const int64_t batch = f.lu.size(0), n = f.lu.size(1);
  const TensorOptions ints = TensorOptions().dtype(kInt32).device(device);
  f.pivots = zeros({batch, n}, ints);
  f.info = full({batch}, -7, ints);
  kernel_for<kernel::LuFactor>(device)(lapack_view(f.lu), f.pivots.view_of(), f.info.view_of());
  return f;
}

TEST(CusolverLu, FactorAndSolveMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t n : {1, 3, 8, 33}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << ", n " << n);
      Tensor a = invertible(3, n, dtype, seed++);
      Factors cpu = factor_on(a, Device::cpu()), gpu = factor_on(a, Device::cuda(0));
      EXPECT_EQ(gpu.pivots.to_vector<int64_t>(), cpu.pivots.to_vector<int64_t>());
      EXPECT_EQ(gpu.info.to_vector<int64_t>(), std::vector<int64_t>(3, 0));
      EXPECT_CUDA_CLOSE(gpu.lu, cpu.lu);
      for (int64_t rhs : {1, 4}) {
        Tensor b = random_tensor({3, rhs, n}, dtype, seed++);  // column-major [3, n, rhs]
        Tensor x_cpu = b.clone(), x_gpu = b.cuda();
        kernel_for<kernel::LuSolve>(DeviceType::CPU)(lapack_view(cpu.lu), cpu.pivots.view_of(), lapack_view(x_cpu));
        kernel_for<kernel::LuSolve>(DeviceType::CUDA)(lapack_view(gpu.lu), gpu.pivots.view_of(), lapack_view(x_gpu));
        EXPECT_CUDA_CLOSE(x_gpu, x_cpu);
      }
    }
  }
}

TEST(CusolverLu, MoreColumnsThanThreadsAndRightHandSidesThanABlock) {
  ANVIL_SKIP_WITHOUT_GPU();
  // n 130 > the hand-written factorization's 128 threads; 70 right-hand sides
  // > its solve's 64 per block.
  Tensor a = invertible(1, 130, kFloat64, 30);
  Factors cpu = factor_on(a, Device::cpu()), gpu = factor_on(a, Device::cuda(0));
  EXPECT_EQ(gpu.pivots.to_vector<int64_t>(), cpu.pivots.to_vector<int64_t>());
  EXPECT_CUDA_CLOSE(gpu.lu, cpu.lu);
  Tensor b = random_tensor({1, 70, 130}, kFloat64, 31);
  Tensor x_cpu = b.clone(), x_gpu = b.cuda();
  kernel_for<kernel::LuSolve>(DeviceType::CPU)(lapack_view(cpu.lu), cpu.pivots.view_of(), lapack_view(x_cpu));
  kernel_for<kernel::LuSolve>(DeviceType::CUDA)(lapack_view(gpu.lu), gpu.pivots.view_of(), lapack_view(x_gpu));
  EXPECT_CUDA_CLOSE(x_gpu, x_cpu);
}

TEST(CusolverLu, SingularMatricesReportTheFirstZeroPivotLikeCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor a = invertible(3, 4, kFloat64, 40);
  a.select(0, 1).zero_();  // all zero: U[0][0] = 0
  a.select(0, 2).select(0, 3).zero_();  // one column (row of the transposed storage) zero
  Factors cpu = factor_on(a, Device::cpu()), gpu = factor_on(a, Device::cuda(0));
  EXPECT_EQ(gpu.info.to_vector<int64_t>(), cpu.info.to_vector<int64_t>());
  EXPECT_EQ(cpu.info.to_vector<int64_t>()[0], 0);
  EXPECT_EQ(cpu.info.to_vector<int64_t>()[1], 1);
  EXPECT_GT(cpu.info.to_vector<int64_t>()[2], 0);
}

TEST(CusolverLu, RejectsRowMajorViewsWithTheCpuMessage) {
  ANVIL_SKIP_WITHOUT_GPU();
  auto message = [](Device device) {
    Tensor a = zeros({1, 3, 3}, TensorOptions().device(device));
    Tensor piv = zeros({1, 3}, TensorOptions().dtype(kInt32).device(device));
    Tensor info = zeros({1}, TensorOptions().dtype(kInt32).device(device));
    View row_major = a.view_of();
    row_major.strides = {9, 3, 1};
    try {
      kernel_for<kernel::LuFactor>(device)(row_major, piv.view_of(), info.view_of());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string cpu = message(Device::cpu());
  EXPECT_NE(cpu.find("lu_factor: expected a column-major"), std::string::npos) << cpu;
  EXPECT_EQ(message(Device::cuda(0)), cpu);
}

TEST(CusolverLinalg, SolveInvDetMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor A = invertible(2, 5, dtype, 60).reshape({2, 1, 5, 5});
    Tensor B = random_tensor({3, 5, 2}, dtype, 61), b = random_tensor({5}, dtype, 62);
    EXPECT_CUDA_CLOSE(linalg::solve(A.cuda(), B.cuda()), linalg::solve(A, B));
    EXPECT_CUDA_CLOSE(linalg::solve(A[0][0].cuda(), b.cuda()), linalg::solve(A[0][0], b));
    EXPECT_CUDA_CLOSE(linalg::inv(A.cuda()), linalg::inv(A));
    EXPECT_CUDA_CLOSE(linalg::det(A.cuda()), linalg::det(A));
    auto [sign_gpu, log_gpu] = linalg::slogdet(A.cuda());
    auto [sign_cpu, log_cpu] = linalg::slogdet(A);
    EXPECT_CUDA_CLOSE(sign_gpu, sign_cpu);
    EXPECT_CUDA_CLOSE(log_gpu, log_cpu);
  }
}

TEST(CusolverLinalg, SolveGradientMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor A = invertible(2, 4, kFloat64, 70), B = random_tensor({2, 4, 3}, kFloat64, 71);
  Tensor G = random_tensor({2, 4, 3}, kFloat64, 72);
  auto grads = [&](Device d) {
    Tensor a = A.to(d).detach().clone().requires_grad_(), b = B.to(d).detach().clone().requires_grad_();
    (linalg::solve(a, b) * G.to(d)).sum().backward();
    return std::pair{a.grad(), b.grad()};
  };
  auto [ga_gpu, gb_gpu] = grads(Device::cuda(0));
  auto [ga_cpu, gb_cpu] = grads(Device::cpu());
  EXPECT_CUDA_CLOSE(ga_gpu, ga_cpu);
  EXPECT_CUDA_CLOSE(gb_gpu, gb_cpu);
}

TEST(CusolverLinalg, SingularMatrixErrorNamesTheBatchElement) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor A = invertible(3, 3, kFloat32, 80);
  A.select(0, 2).zero_();
  try {
    linalg::solve(A.cuda(), random_tensor({3, 3, 1}, kFloat32, 81).cuda());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("linalg.solve: (Batch element 2): The solver failed"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace anvil
