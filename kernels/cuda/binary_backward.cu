// The binary op table's ActivationBackward rows (kernels/ops/binary_ops.h:
// the fused activation gradients, a = incoming gradient, b = saved input or
// output) on CUDA, floating dtypes only.
#include "kernels/cuda/launch/table_launch.cuh"

namespace anvil::cuda {

void launch_binary_backward(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  launch_binary_family<ops::BinaryFamily::ActivationBackward>(op, out, a, b, t);
}

}  // namespace anvil::cuda
