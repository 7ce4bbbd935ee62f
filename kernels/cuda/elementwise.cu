// CudaBackend::unary, binary, where: validation (same checks and messages as
// the CPU backend) and routing. The kernels live in unary.cu, binary.cu,
// compare.cu and binary_backward.cu (split so they compile in parallel);
// where is here, moving elements as raw bits of their size.
#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/elementwise_launch.cuh"
#include "kernels/cuda/elementwise_ops.h"
#include "kernels/cuda/nvtx.h"

namespace anvil::cuda {
namespace {

// where on the bit patterns: dtypes of one size share one kernel.
template <typename Bits>
struct SelectBits {
  __device__ __forceinline__ Bits operator()(uint8_t c, Bits x, Bits y) const { return c ? x : y; }
};

template <size_t Bytes> struct bits_of;
template <> struct bits_of<1> { using type = uint8_t; };
template <> struct bits_of<2> { using type = uint16_t; };
template <> struct bits_of<4> { using type = uint32_t; };
template <> struct bits_of<8> { using type = uint64_t; };

template <size_t Bytes>
void launch_where(const View& out, const View& cond, const View& a, const View& b, LaunchTarget t) {
  using Bits = typename bits_of<Bytes>::type;
  launch_elementwise<Bits, uint8_t, Bits, Bits>("where", t.stream, t.device, out, cond, a, b, SelectBits<Bits>{});
}

bool is_compare(BinaryOp op) { return op >= BinaryOp::Eq && op <= BinaryOp::LogicalOr; }
bool is_backward(BinaryOp op) { return op >= BinaryOp::ReluBackward; }

}  // namespace

void CudaBackend::unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) {
  ANVIL_NVTX_RANGE("unary");
  ANVIL_CHECK(out.shape == in.shape, op_name(op), ": output shape ", out.shape, " differs from input shape ",
              in.shape);
  DeviceGuard guard(out.device_index);
  launch_unary(op, out, in, p, LaunchTarget{stream(out.device_index), out.device_index});
}

void CudaBackend::binary(BinaryOp op, const View& out, const View& a, const View& b) {
  ANVIL_NVTX_RANGE("binary");
  const char* name = op_name(op);
  ANVIL_CHECK(out.shape == a.shape && out.shape == b.shape, name, ": shapes differ: out ", out.shape, ", a ",
              a.shape, ", b ", b.shape, " (inputs must be broadcast to the output shape)");
  ANVIL_CHECK(a.dtype == b.dtype, name, ": input dtypes differ: ", a.dtype, " and ", b.dtype);
  DeviceGuard guard(out.device_index);
  const LaunchTarget t{stream(out.device_index), out.device_index};
  if (is_compare(op)) launch_binary_compare(op, out, a, b, t);
  else if (is_backward(op)) launch_binary_backward(op, out, a, b, t);
  else launch_binary_arithmetic(op, out, a, b, t);
}

void CudaBackend::where(const View& out, const View& cond, const View& a, const View& b) {
  ANVIL_NVTX_RANGE("where");
  ANVIL_CHECK(out.shape == cond.shape && out.shape == a.shape && out.shape == b.shape,
              "where: shapes differ: out ", out.shape, ", cond ", cond.shape, ", a ", a.shape, ", b ", b.shape,
              " (inputs must be broadcast to the output shape)");
  ANVIL_CHECK(cond.dtype == kBool || cond.dtype == kUInt8, "where: condition must be bool, got ", cond.dtype);
  ANVIL_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, "where: dtypes differ: out ", out.dtype, ", a ",
              a.dtype, ", b ", b.dtype);
  DeviceGuard guard(out.device_index);
  const LaunchTarget t{stream(out.device_index), out.device_index};
  // The condition is read as bytes: any nonzero byte selects a (as on the CPU).
  switch (itemsize(out.dtype)) {
    case 1: return launch_where<1>(out, cond, a, b, t);
    case 2: return launch_where<2>(out, cond, a, b, t);
    case 4: return launch_where<4>(out, cond, a, b, t);
    case 8: return launch_where<8>(out, cond, a, b, t);
    default: fail("where: unsupported item size ", itemsize(out.dtype), " of dtype ", out.dtype);
  }
}

}  // namespace anvil::cuda
