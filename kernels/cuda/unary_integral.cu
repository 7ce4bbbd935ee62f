// Unary ops on integer and bool inputs: every row of the op table
// (kernels/ops/unary_ops.h) for int32, int64, uint8 and bool; rows whose
// domain is floating refuse them with the CPU's message. Floating inputs are
// unary_floating.cu.
#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/launch/table_launch.cuh"

namespace anvil::cuda {

void launch_unary_integral(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  switch (in.dtype) {
    case DType::Int32:
      return launch_unary_rows<int32_t>(op, out, in, p, t);
    case DType::Int64:
      return launch_unary_rows<int64_t>(op, out, in, p, t);
    case DType::UInt8:
      return launch_unary_rows<uint8_t>(op, out, in, p, t);
    case DType::Bool:
      return launch_unary_rows<bool>(op, out, in, p, t);
    default:
      break;
  }
  fail(op_name(op), ": dtype ", in.dtype, " is not an integer or bool dtype");
}

}  // namespace anvil::cuda
