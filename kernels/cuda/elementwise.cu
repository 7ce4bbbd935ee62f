// kernel::Unary, binary, where: validation (same checks and messages as
// the CPU backend) and routing. The kernels live in unary_floating.cu, unary_integral.cu, binary.cu,
// compare.cu and binary_backward.cu (split so they compile in parallel);
// where is here, moving elements as raw bits of their size.
#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cuda/launch/elementwise_launch.cuh"
#include "kernels/cuda/elementwise_ops.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/shapes/bits_of.h"

namespace anvil::cuda {
namespace {

// where on the bit patterns: dtypes of one size share one kernel.
template <typename Bits> struct SelectBits {
  __device__ __forceinline__ Bits operator()(uint8_t c, Bits x, Bits y) const { return c ? x : y; }
};

using shapes::bits_of;

template <size_t Bytes>
void launch_where(const View& out, const View& cond, const View& a, const View& b, LaunchTarget t) {
  using Bits = typename bits_of<Bytes>::type;
  launch_elementwise<Bits, uint8_t, Bits, Bits>("where", t.stream, t.device, out, cond, a, b, SelectBits<Bits>{});
}

}  // namespace

void unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) {
  ANVIL_NVTX_RANGE("unary");
  shapes::check_unary(op, out, in);
  DeviceGuard guard(out.device_index);
  const LaunchTarget t{stream(out.device_index), out.device_index};
  if (is_floating(in.dtype))
    launch_unary_floating(op, out, in, p, t);
  else
    launch_unary_integral(op, out, in, p, t);
}

void binary(BinaryOp op, const View& out, const View& a, const View& b) {
  ANVIL_NVTX_RANGE("binary");
  shapes::check_binary(op, out, a, b);
  DeviceGuard guard(out.device_index);
  const LaunchTarget t{stream(out.device_index), out.device_index};
  switch (ops::binary_info(op).family) {
    case ops::BinaryFamily::Arithmetic:
      return launch_binary_arithmetic(op, out, a, b, t);
    case ops::BinaryFamily::Compare:
      return launch_binary_compare(op, out, a, b, t);
    case ops::BinaryFamily::ActivationBackward:
      return launch_binary_backward(op, out, a, b, t);
  }
}

void where(const View& out, const View& cond, const View& a, const View& b) {
  ANVIL_NVTX_RANGE("where");
  shapes::check_where(out, cond, a, b);
  DeviceGuard guard(out.device_index);
  const LaunchTarget t{stream(out.device_index), out.device_index};
  // The condition is read as bytes: any nonzero byte selects a (as on the CPU).
  switch (itemsize(out.dtype)) {
    case 1:
      return launch_where<1>(out, cond, a, b, t);
    case 2:
      return launch_where<2>(out, cond, a, b, t);
    case 4:
      return launch_where<4>(out, cond, a, b, t);
    case 8:
      return launch_where<8>(out, cond, a, b, t);
    default:
      fail("where: unsupported item size ", itemsize(out.dtype), " of dtype ", out.dtype);
  }
}

ANVIL_REGISTER_KERNEL(kernel::Unary, CUDA, unary);
ANVIL_REGISTER_KERNEL(kernel::Binary, CUDA, binary);
ANVIL_REGISTER_KERNEL(kernel::Where, CUDA, where);

}  // namespace anvil::cuda
