// Unary ops on floating inputs: every row of the op table (kernels/ops/unary_ops.h,
// shared with the CPU backend) for float, double, half and bfloat16, one
// launch per (op, dtype) through launch_elementwise. The integer and bool
// inputs are unary_integral.cu: the two halves compile in parallel.
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/table_launch.cuh"

namespace anvil::cuda {

void launch_unary_floating(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  visit_floating_device_dtype(op_name(op), in.dtype,
                              [&](auto tag) { launch_unary_rows<decltype(tag)>(op, out, in, p, t); });
}

}  // namespace anvil::cuda
