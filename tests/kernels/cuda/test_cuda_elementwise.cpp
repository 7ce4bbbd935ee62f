// CUDA unary/binary/where through the Tensor ops, against the CPU backend:
// every dtype an op accepts, odd sizes, broadcast and strided inputs, the
// same errors for dtypes an op rejects, and autograd on CUDA vs CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/factory.h"
#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/runtime.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

const DType kFloats[] = {kFloat32, kFloat64, kFloat16, kBFloat16};
const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

using UnaryFn = std::function<Tensor(const Tensor&)>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

TEST(CudaElementwise, FloatingUnaryOps) {
  ANVIL_SKIP_WITHOUT_GPU();
  const std::pair<const char*, UnaryFn> ops[] = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, INFINITY); }},
      {"logical_not", [](const Tensor& x) { return logical_not(x); }},
  };
  for (const auto& [name, f] : ops)
    for (DType dt : kFloats)
      for (int64_t n : {1, 3, 1023, 65537}) {
        Tensor x = test::random_tensor({n}, dt, n);
        EXPECT_CUDA_CLOSE(f(x.cuda()), f(x)) << name << " " << dt << " n=" << n;
      }
  Tensor pos = test::random_uniform_tensor({1027}, kFloat32, 0.1, 4.0, 9);
  EXPECT_CUDA_CLOSE(log(pos.cuda()), log(pos));
  EXPECT_CUDA_CLOSE(sqrt(pos.cuda()), sqrt(pos));
}

TEST(CudaElementwise, IntegerUnaryOps) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kInt32, kInt64, kUInt8}) {
    Tensor x = test::random_tensor({1029}, dt, 2);
    EXPECT_CUDA_CLOSE(neg(x.cuda()), neg(x)) << dt;
    EXPECT_CUDA_CLOSE(abs(x.cuda()), abs(x)) << dt;
    EXPECT_CUDA_CLOSE(relu(x.cuda()), relu(x)) << dt;
    EXPECT_CUDA_CLOSE(clamp(x.cuda(), -10, INFINITY), clamp(x, -10, INFINITY)) << dt;
    EXPECT_CUDA_CLOSE(exp(x.cuda()), exp(x)) << dt;  // the op layer promotes to float32
  }
  Tensor b = test::random_tensor({100}, kBool, 3);
  EXPECT_CUDA_CLOSE(logical_not(b.cuda()), logical_not(b));
}

TEST(CudaElementwise, BinaryOpsAllDtypesWithBroadcast) {
  ANVIL_SKIP_WITHOUT_GPU();
  const std::pair<const char*, BinaryFn> ops[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
  };
  for (const auto& [name, f] : ops)
    for (DType dt : kAllDtypes) {
      Tensor a = test::random_tensor({33, 65}, dt, 1), b = test::random_tensor({33, 65}, dt, 2);
      Tensor row = test::random_tensor({1, 65}, dt, 3), col = test::random_tensor({33, 1}, dt, 4);
      EXPECT_CUDA_CLOSE(f(a.cuda(), b.cuda()), f(a, b)) << name << " " << dt;
      EXPECT_CUDA_CLOSE(f(a.cuda(), row.cuda()), f(a, row)) << name << " " << dt << " row broadcast";
      EXPECT_CUDA_CLOSE(f(col.cuda(), row.cuda()), f(col, row)) << name << " " << dt << " outer";
      EXPECT_CUDA_CLOSE(f(a.cuda().t(), b.cuda().t()), f(a.t(), b.t())) << name << " " << dt << " transposed";
    }
}

TEST(CudaElementwise, DivPowSubAndIntegerTrueDivision) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : kFloats) {
    Tensor a = test::random_tensor({65537}, dt, 5);
    Tensor b = test::random_uniform_tensor({65537}, dt, 0.5, 2.0, 6);
    EXPECT_CUDA_CLOSE(div(a.cuda(), b.cuda()), div(a, b)) << dt;
    EXPECT_CUDA_CLOSE(sub(a.cuda(), b.cuda()), sub(a, b)) << dt;
    EXPECT_CUDA_CLOSE(pow(b.cuda(), a.cuda()), pow(b, a)) << dt;
  }
  Tensor ia = test::random_tensor({1000}, kInt32, 7), ib = add(abs(test::random_tensor({1000}, kInt32, 8)), Scalar(1));
  EXPECT_CUDA_CLOSE(div(ia.cuda(), ib.cuda()), div(ia, ib));
}

TEST(CudaElementwise, NaNPropagationAndEmpty) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor a = from_vector<float>({NAN, 1.f, -2.f, NAN}, {4}), b = from_vector<float>({0.f, NAN, 3.f, 1.f}, {4});
  EXPECT_CUDA_CLOSE(maximum(a.cuda(), b.cuda()), maximum(a, b));
  EXPECT_CUDA_CLOSE(minimum(a.cuda(), b.cuda()), minimum(a, b));
  EXPECT_CUDA_CLOSE(relu(a.cuda()), relu(a));
  EXPECT_CUDA_CLOSE(clamp(a.cuda(), -1, 1), clamp(a, -1, 1));
  Tensor e = zeros({0, 5});
  EXPECT_EQ(add(e.cuda(), e.cuda()).numel(), 0);
}

TEST(CudaElementwise, WhereAllDtypes) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : kAllDtypes) {
    Tensor c = test::random_tensor({17, 31}, kBool, 1);
    Tensor a = test::random_tensor({17, 31}, dt, 2), b = test::random_tensor({1, 31}, dt, 3);
    EXPECT_CUDA_CLOSE(where(c.cuda(), a.cuda(), b.cuda()), where(c, a, b)) << dt;
  }
}

TEST(CudaElementwise, GradientsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const std::pair<const char*, UnaryFn> ops[] = {
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); }},
      {"mul_self", [](const Tensor& x) { return mul(x, exp(x)); }},
  };
  for (const auto& [name, f] : ops) {
    Tensor x = test::random_tensor({9, 130}, kFloat32, 11);
    Tensor xc = x.cuda().detach().requires_grad_();
    Tensor xh = x.detach().requires_grad_();
    sum(f(xc)).backward();
    sum(f(xh)).backward();
    EXPECT_CUDA_CLOSE(xc.grad(), xh.grad()) << name;
  }
}

}  // namespace
}  // namespace anvil

namespace anvil {
namespace {

// Paths the op layer never reaches (it promotes integer inputs first), called
// on the backend directly: integer true division and the dtype errors.
TEST(CudaElementwiseBackend, IntegerTrueDivisionAndDtypeErrors) {
  ANVIL_SKIP_WITHOUT_GPU();
  Runtime& cuda = runtime_for(DeviceType::CUDA);
  Runtime& cpu = runtime_for(DeviceType::CPU);
  for (DType dt : {kInt32, kInt64, kUInt8, kBool}) {
    Tensor a = test::random_tensor({257}, dt, 1);
    Tensor b = add(abs(test::random_tensor({257}, dt == kBool ? kInt32 : dt, 2)), Scalar(1)).to(dt);
    for (DType out_dt : {kFloat32, kFloat64, kFloat16}) {
      Tensor want = zeros({257}, TensorOptions().dtype(out_dt));
      Tensor got = zeros({257}, TensorOptions().dtype(out_dt).device(Device::cuda(0)));
      Tensor ac = a.cuda(), bc = b.cuda();
      kernel_for<kernel::Binary>(cpu.type())(BinaryOp::Div, want.view_of(), a.view_of(), b.view_of());
      kernel_for<kernel::Binary>(cuda.type())(BinaryOp::Div, got.view_of(), ac.view_of(), bc.view_of());
      EXPECT_CUDA_CLOSE(got, want) << dt << " / " << dt << " -> " << out_dt;
    }
    Tensor out = zeros({257}, TensorOptions().dtype(dt).device(Device::cuda(0)));
    Tensor ac = a.cuda();
    EXPECT_THROW(kernel_for<kernel::Unary>(cuda.type())(UnaryOp::Exp, out.view_of(), ac.view_of(), {}), Error) << dt;
  }
  Tensor f = test::random_tensor({8}, kFloat32, 3).cuda();
  Tensor wrong = zeros({8}, TensorOptions().dtype(kFloat64).device(Device::cuda(0)));
  EXPECT_THROW(kernel_for<kernel::Unary>(cuda.type())(UnaryOp::Neg, wrong.view_of(), f.view_of(), {}),
               Error);  // out dtype must match
}

}  // namespace
}  // namespace anvil
