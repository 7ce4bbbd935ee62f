// linalg::vector_norm / matrix_norm / norm on CUDA against the CPU. They are
// composed of reductions that have both backends; this checks the
// composition, values and gradients, on the device. The singular-value ones
// (ord 2, -2, "nuc") and linalg::svd / svdvals run on the backend's svd:
// cuSOLVER gesvdj on a real GPU, the Jacobi kernel of
// kernels/cusolver/svd_kernels.cu on the emulated one, against LAPACK.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <tuple>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;
using test::Tolerance;

// "[2, 3, 4]", for the traces (Shape has no operator<<).
std::string shape_text(const Shape& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CudaLinalgNorms, ValuesMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = random_tensor({3, 5, 4}, dtype, 90);
    Tensor xg = x.cuda();
    for (double ord : {2.0, 1.0, kInf, -kInf, 0.0, 3.0}) {
      SCOPED_TRACE(::testing::Message() << "ord " << ord);
      EXPECT_CUDA_CLOSE(linalg::vector_norm(xg, ord), linalg::vector_norm(x, ord));
      EXPECT_CUDA_CLOSE(linalg::vector_norm(xg, ord, {-1}, true), linalg::vector_norm(x, ord, {-1}, true));
    }
    for (double ord : {1.0, -1.0, kInf, -kInf}) {
      SCOPED_TRACE(::testing::Message() << "matrix ord " << ord);
      EXPECT_CUDA_CLOSE(linalg::matrix_norm(xg, ord), linalg::matrix_norm(x, ord));
    }
    EXPECT_CUDA_CLOSE(linalg::norm(xg, "fro", {0, 2}), linalg::norm(x, "fro", {0, 2}));
    EXPECT_CUDA_CLOSE(linalg::norm(xg), linalg::norm(x));
  }
}

TEST(CudaLinalgNorms, GradientsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor({2, 3, 4}, kFloat64, 91);
  auto grad_on = [&](Device d, double ord) {
    Tensor xd = x.to(d).detach().clone().requires_grad_();  // a fresh leaf per call
    (linalg::matrix_norm(xd, ord).sum() + linalg::vector_norm(xd, 3.0, {1}).sum()).backward();
    return xd.grad();
  };
  for (double ord : {1.0, kInf}) EXPECT_CUDA_CLOSE(grad_on(Device::cuda(0), ord), grad_on(Device::cpu(), ord));
}

// Two factorizations agree to a few ulps of the largest singular value, not
// of each element: float32 gets more room than tolerance_for gives.
Tolerance svd_tolerance(DType dtype) { return dtype == kFloat64 ? Tolerance{1e-9, 1e-11} : Tolerance{2e-5, 2e-5}; }

TEST(CudaLinalgNorms, SingularValueNormsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{3, 5, 4}, Shape{2, 3, 7}, Shape{6, 6}, Shape{1, 9, 1}}) {
      SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape));
      Tensor x = random_tensor(shape, dtype, 92);
      Tensor xg = x.cuda();
      for (double ord : {2.0, -2.0}) {
        SCOPED_TRACE(::testing::Message() << "ord " << ord);
        EXPECT_CUDA_CLOSE(linalg::matrix_norm(xg, ord), linalg::matrix_norm(x, ord), svd_tolerance(dtype));
      }
      EXPECT_CUDA_CLOSE(linalg::matrix_norm(xg, "nuc"), linalg::matrix_norm(x, "nuc"), svd_tolerance(dtype));
      EXPECT_CUDA_CLOSE(linalg::svdvals(xg), linalg::svdvals(x), svd_tolerance(dtype));
    }
    Tensor x = random_tensor({3, 5, 4}, dtype, 93);
    EXPECT_CUDA_CLOSE(linalg::matrix_norm(x.cuda(), 2, {0, 2}, true), linalg::matrix_norm(x, 2, {0, 2}, true),
                      svd_tolerance(dtype));
    EXPECT_CUDA_CLOSE(linalg::norm(x.cuda(), "nuc", {2, 1}), linalg::norm(x, "nuc", {2, 1}), svd_tolerance(dtype));
  }
}

TEST(CudaLinalgNorms, SvdFactorsOnDevice) {
  ANVIL_SKIP_WITHOUT_GPU();
  // The singular vectors' signs are the algorithm's choice, so the device's
  // factors are checked by what does not depend on them: U S Vh is A, U and
  // Vh are orthonormal, U Vh matches the CPU's.
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{2, 6, 4}, Shape{4, 6}, Shape{2, 5, 5}}) {
      SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape));
      Tensor x = random_tensor(shape, dtype, 94);
      auto [U, S, Vh] = linalg::svd(x.cuda(), false);
      EXPECT_TRUE(U.device().is_cuda() && S.device().is_cuda() && Vh.device().is_cuda());
      const Tolerance loose = dtype == kFloat64 ? Tolerance{1e-9, 1e-10} : Tolerance{1e-4, 1e-4};
      EXPECT_CUDA_CLOSE(matmul(U * S.unsqueeze(-2), Vh), x, loose);
      for (const Tensor& gram : {matmul(U.transpose(-1, -2), U), matmul(Vh, Vh.transpose(-1, -2))})
        EXPECT_CUDA_CLOSE(gram, eye(S.size(-1), TensorOptions().dtype(dtype)).expand(gram.shape()).contiguous(), loose);
      auto [Uc, Sc, Vhc] = linalg::svd(x, false);
      EXPECT_CUDA_CLOSE(S, Sc, svd_tolerance(dtype));
      EXPECT_CUDA_CLOSE(matmul(U, Vh), matmul(Uc, Vhc), loose);
    }
  }
}

TEST(CudaLinalgNorms, SingularValueNormGradientsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{5, 3}}) {
    SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape));
    Tensor x = random_tensor(shape, kFloat64, 95);
    auto grad_on = [&](Device d, auto&& norm) {
      Tensor xd = x.to(d).detach().clone().requires_grad_();
      norm(xd).sum().backward();
      return xd.grad();
    };
    for (double ord : {2.0, -2.0}) {
      SCOPED_TRACE(::testing::Message() << "ord " << ord);
      auto f = [ord](const Tensor& a) { return linalg::matrix_norm(a, ord); };
      EXPECT_CUDA_CLOSE(grad_on(Device::cuda(0), f), grad_on(Device::cpu(), f), Tolerance{1e-8, 1e-10});
    }
    auto nuc = [](const Tensor& a) { return linalg::matrix_norm(a, "nuc"); };
    EXPECT_CUDA_CLOSE(grad_on(Device::cuda(0), nuc), grad_on(Device::cpu(), nuc), Tolerance{1e-8, 1e-10});
    auto factors = [](const Tensor& a) {
      auto [U, S, Vh] = linalg::svd(a, false);
      return matmul(U * (S * S).unsqueeze(-2), Vh);
    };
    EXPECT_CUDA_CLOSE(grad_on(Device::cuda(0), factors), grad_on(Device::cpu(), factors), Tolerance{1e-8, 1e-10});
  }
}

TEST(CudaLinalgNorms, SvdBackendChecksAndEmptyBatches) {
  ANVIL_SKIP_WITHOUT_GPU();
  // A row-major batch is refused with the same message on both backends.
  for (Device device : {Device::cpu(), Device::cuda(0)}) {
    Tensor a = random_tensor({2, 3, 4}, kFloat32, 96).to(device);
    Tensor s = empty({2, 3}, TensorOptions().dtype(kFloat32).device(device));
    Tensor info = empty({2}, TensorOptions().dtype(kInt32).device(device));
    try {
      kernel_for<kernel::Svd>(device)(a.view_of(), s.view_of(), nullptr, nullptr, info.view_of());
      ADD_FAILURE() << "a row-major batch was accepted on " << (device.is_cuda() ? "CUDA" : "the CPU");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("svd: expected a column-major"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(linalg::svdvals(random_tensor({0, 3, 2}, kFloat32, 97).cuda()).shape(), (Shape{0, 2}));
  EXPECT_EQ(linalg::matrix_norm(random_tensor({2, 0, 3}, kFloat64, 98).cuda(), "nuc").cpu().to_vector<double>(),
            (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace anvil
