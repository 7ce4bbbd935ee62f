// CUDA reductions against the CPU backend: every op, layouts that take the
// rows, columns and split (two-stage) paths, non-contiguous inputs, empty
// reductions, NaN, ties for argmax/argmin, and gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

const DType kFloats[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

// Sums in float on the GPU vs double on the CPU: a looser bound for 16-bit outputs.
test::Tolerance reduce_tol(DType dt) {
  test::Tolerance t = test::tolerance_for(dt);
  if (dt == kFloat32) t = {1e-4, 1e-4};
  return t;
}

TEST(CudaReduce, FloatingOpsOverShapesAndDims) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Shape shapes[] = {{1}, {3}, {1023}, {65537}, {7, 1025}, {4099, 3}, {5, 6, 7}, {2, 3000, 33}};
  for (DType dt : kFloats)
    for (const Shape& s : shapes) {
      Tensor x = test::random_tensor(s, dt, s.back());
      Tensor xc = x.cuda();
      const auto tol = reduce_tol(dt);
      EXPECT_CUDA_CLOSE(sum(xc), sum(x), tol) << dt;
      EXPECT_CUDA_CLOSE(mean(xc), mean(x), tol) << dt;
      EXPECT_CUDA_CLOSE(amax(xc), amax(x), tol) << dt;
      EXPECT_CUDA_CLOSE(var(xc), var(x), tol) << dt;
      EXPECT_CUDA_CLOSE(norm(xc, 2.0), norm(x, 2.0), tol) << dt;
      for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
        EXPECT_CUDA_CLOSE(sum(xc, {d}), sum(x, {d}), tol) << dt << " dim " << d;
        EXPECT_CUDA_CLOSE(amin(xc, {d}, true), amin(x, {d}, true), tol) << dt << " dim " << d;
        EXPECT_CUDA_CLOSE(var(xc, {d}, 0), var(x, {d}, 0), tol) << dt << " dim " << d;
        EXPECT_CUDA_CLOSE(argmax(xc, d), argmax(x, d)) << dt << " dim " << d;
        EXPECT_CUDA_CLOSE(argmin(xc, d), argmin(x, d)) << dt << " dim " << d;
        for (double p : {1.0, 3.0, double(INFINITY), -double(INFINITY), 0.0})
          EXPECT_CUDA_CLOSE(norm(xc, p, {d}), norm(x, p, {d}), tol) << dt << " p " << p;
      }
    }
}

TEST(CudaReduce, ProdAndIntegerSums) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = test::random_uniform_tensor({6, 40}, kFloat32, 0.8, 1.2, 3);
  EXPECT_CUDA_CLOSE(prod(x.cuda(), {1}), prod(x, {1}), reduce_tol(kFloat32));
  for (DType dt : {kInt32, kInt64, kUInt8, kBool}) {
    Tensor y = test::random_tensor({37, 1001}, dt, 4);
    EXPECT_CUDA_CLOSE(sum(y.cuda()), sum(y)) << dt;
    EXPECT_CUDA_CLOSE(sum(y.cuda(), {0}), sum(y, {0})) << dt;
    EXPECT_CUDA_CLOSE(amax(y.cuda(), {1}), amax(y, {1})) << dt;
    EXPECT_CUDA_CLOSE(argmin(y.cuda(), 1), argmin(y, 1)) << dt;
    EXPECT_THROW(mean(y.cuda()), Error) << dt;
  }
}

TEST(CudaReduce, NonContiguousInputs) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({300, 129}, kFloat32, 5);
  const auto tol = reduce_tol(kFloat32);
  EXPECT_CUDA_CLOSE(sum(x.cuda().t(), {1}), sum(x.t(), {1}), tol);
  EXPECT_CUDA_CLOSE(sum(x.cuda().slice(1, 1, 128, 3), {0}), sum(x.slice(1, 1, 128, 3), {0}), tol);
  Tensor y = test::random_tensor({4, 50, 6, 70}, kFloat32, 6);
  EXPECT_CUDA_CLOSE(sum(y.cuda(), {0, 2}), sum(y, {0, 2}), tol);
  EXPECT_CUDA_CLOSE(var(y.cuda().permute({3, 1, 0, 2}), {1, 3}), var(y.permute({3, 1, 0, 2}), {1, 3}), tol);
  Tensor row = test::random_tensor({1, 70}, kFloat32, 7);
  EXPECT_CUDA_CLOSE(sum(row.cuda().expand({500, 70}), {0}), sum(row.expand({500, 70}), {0}), tol);
}

TEST(CudaReduce, EmptyNaNAndTies) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor e = zeros({0, 4});
  EXPECT_CUDA_CLOSE(sum(e.cuda(), {0}), sum(e, {0}));
  EXPECT_CUDA_CLOSE(mean(e.cuda(), {0}), mean(e, {0}));
  EXPECT_THROW(amax(e.cuda(), {0}), Error);
  Tensor n = from_vector<float>({1.f, NAN, 3.f, NAN, 2.f}, {1, 5});
  EXPECT_CUDA_CLOSE(amax(n.cuda(), {1}), amax(n, {1}));
  EXPECT_CUDA_CLOSE(argmax(n.cuda(), 1), argmax(n, 1));
  EXPECT_CUDA_CLOSE(sum(n.cuda()), sum(n));
  Tensor t = zeros({3, 5000});  // all ties: first index, also across split blocks
  EXPECT_CUDA_CLOSE(argmax(t.cuda(), 1), argmax(t, 1));
  EXPECT_CUDA_CLOSE(argmin(t.cuda(), 0), argmin(t, 0));
  Tensor big = full({1, 300000}, Scalar(1.0));
  EXPECT_CUDA_CLOSE(argmax(big.cuda(), 1), argmax(big, 1));
}

// Called on the backends directly (the op layer promotes integer inputs first):
// var rejects integer dtypes with the CPU's message.
TEST(CudaReduce, VarOfIntegersFailsWithTheCpuMessage) {
  ANVIL_SKIP_WITHOUT_GPU();
  auto message = [](DeviceType type, const Tensor& in, const Tensor& out) {
    try {
      kernel_for<kernel::Reduce>(type)(ReduceOp::Var, out.view_of(), in.view_of(), ReduceParams{});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (DType dt : {kInt32, kInt64, kUInt8, kBool}) {
    Tensor x = test::random_tensor({4, 9}, dt, 9);
    Tensor xc = x.cuda();
    const std::string cpu = message(DeviceType::CPU, x, zeros({4, 1}));
    const std::string gpu = message(DeviceType::CUDA, xc, zeros({4, 1}, TensorOptions().device(Device::cuda(0))));
    EXPECT_NE(cpu.find("(floating dtypes only)"), std::string::npos) << cpu;
    EXPECT_EQ(gpu, cpu) << dt;
  }
}

TEST(CudaReduce, GradientsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({17, 33}, kFloat32, 8);
  auto check = [&](auto f, const char* name) {
    Tensor xc = x.cuda().detach().requires_grad_();
    Tensor xh = x.detach().requires_grad_();
    f(xc).backward();
    f(xh).backward();
    EXPECT_CUDA_CLOSE(xc.grad(), xh.grad(), reduce_tol(kFloat32)) << name;
  };
  check([](const Tensor& t) { return sum(mul(sum(t, {1}), sum(t, {1}))); }, "sum");
  check([](const Tensor& t) { return sum(mean(t, {0})); }, "mean");
  check([](const Tensor& t) { return sum(var(t, {1})); }, "var");
  check([](const Tensor& t) { return norm(t, 2.0); }, "norm");
  check([](const Tensor& t) { return sum(amax(t, {1})); }, "amax");
}

}  // namespace
}  // namespace anvil
