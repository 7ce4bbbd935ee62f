// linalg::vector_norm / matrix_norm / norm on CUDA against the CPU. They are
// composed of reductions that have both backends; this checks the
// composition, values and gradients, on the device.
#include <gtest/gtest.h>

#include <limits>

#include "core/ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;

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

}  // namespace
}  // namespace anvil
