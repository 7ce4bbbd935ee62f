// The binary op table's Compare rows (kernels/ops/binary_ops.h: eq, ne, lt,
// le, gt, ge, logical_and, logical_or) on CUDA: bool results, every dtype.
#include "kernels/cuda/launch/table_launch.cuh"

namespace anvil::cuda {

void launch_binary_compare(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  launch_binary_family<ops::BinaryFamily::Compare>(op, out, a, b, t);
}

}  // namespace anvil::cuda
