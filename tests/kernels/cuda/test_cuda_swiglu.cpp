// swiglu on CUDA against the CPU kernel: forward and both gradients in every
// floating dtype, over lengths that are not a multiple of a block, and a
// strided input (core makes it dense); and autograd through swiglu on both
// devices. On the emulated GPU every checker runs over the kernels.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/swiglu_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;

test::Tolerance tol(DType d) {
  if (d == kFloat16) return {4e-3, 4e-3};
  if (d == kBFloat16) return {2e-2, 2e-2};
  if (d == kFloat32) return {1e-5, 1e-6};
  return {1e-12, 1e-13};
}

TEST(CudaSwiglu, TheCudaKernelIsRegistered) {
  // Without a GPU the kernel still registers: CUDA must never silently run
  // the composed fallback for swiglu.
  EXPECT_NE(find_kernel<kernel::Swiglu>(DeviceType::CUDA), nullptr);
  EXPECT_NE(find_kernel<kernel::SwigluBackward>(DeviceType::CUDA), nullptr);
}

TEST(CudaSwiglu, ForwardAndGradientsMatchTheCpuInEveryDtype) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const Shape& shape : {Shape{1}, Shape{3, 37}, Shape{2, 5, 300}}) {
      const Tensor gate = random_tensor(shape, dt, 1) * 3.0, up = random_tensor(shape, dt, 2);
      const Tensor grad = random_tensor(shape, dt, 3);
      const std::string what = std::string(dtype_name(dt)) + " " + gate.shape_str();
      const Tensor want = swiglu(gate, up);
      EXPECT_TRUE(all_close(swiglu(gate.cuda(), up.cuda()).cpu(), want, tol(dt))) << "forward, " << what;

      Tensor gg = empty(shape, gate.options()), gu = empty(shape, gate.options());
      kernel_for<kernel::SwigluBackward>(DeviceType::CPU)(gg.view_of(), gu.view_of(), grad.view_of(), gate.view_of(),
                                                          up.view_of());
      Tensor dgg = empty(shape, gate.options().device(Device::cuda())), dgu = empty_like(dgg);
      const Tensor dgrad = grad.cuda(), dgate = gate.cuda(), dup = up.cuda();
      kernel_for<kernel::SwigluBackward>(DeviceType::CUDA)(dgg.view_of(), dgu.view_of(), dgrad.view_of(),
                                                           dgate.view_of(), dup.view_of());
      EXPECT_TRUE(all_close(dgg.cpu(), gg, tol(dt))) << "grad_gate, " << what;
      EXPECT_TRUE(all_close(dgu.cpu(), gu, tol(dt))) << "grad_up, " << what;
    }
  }
}

TEST(CudaSwiglu, AutogradOnBothDevicesAgreesOnAStridedInput) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor base = random_tensor({16, 24}, kFloat32, 4);
  for (Device d : {Device::cpu(), Device::cuda()}) {
    SCOPED_TRACE(d.str());
    Tensor gate = base.to(d).t().detach().requires_grad_(), up = random_tensor({24, 16}, kFloat32, 5).to(d);
    up.requires_grad_();
    swiglu(gate, up).sum().backward();
    const Tensor s = sigmoid(gate.detach());
    EXPECT_TRUE(
        all_close(gate.grad().cpu(), (up.detach() * s * (gate.detach() * (1.0 - s) + 1.0)).cpu(), tol(kFloat32)));
    EXPECT_TRUE(all_close(up.grad().cpu(), (gate.detach() * s).cpu(), tol(kFloat32)));
  }
}

}  // namespace
}  // namespace anvil
