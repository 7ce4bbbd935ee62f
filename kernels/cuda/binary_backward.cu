// Fused activation gradients (a = incoming gradient, b = saved input or
// output), floating dtypes only.
#include "kernels/cuda/binary_launch.cuh"
#include "kernels/cuda/dtype_dispatch.h"

namespace anvil::cuda {

void launch_binary_backward(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::ReluBackward: return run_binary<T>(name, out, a, b, dev::ReluBackwardF{}, t);
      case BinaryOp::GeluTanhBackward: return run_binary<T>(name, out, a, b, dev::GeluTanhBackwardF{}, t);
      case BinaryOp::GeluErfBackward: return run_binary<T>(name, out, a, b, dev::GeluErfBackwardF{}, t);
      case BinaryOp::SiluBackward: return run_binary<T>(name, out, a, b, dev::SiluBackwardF{}, t);
      case BinaryOp::SigmoidBackward: return run_binary<T>(name, out, a, b, dev::SigmoidBackwardF{}, t);
      case BinaryOp::TanhBackward: return run_binary<T>(name, out, a, b, dev::TanhBackwardF{}, t);
      default: break;
    }
    fail("binary: ", name, " is not an activation gradient");
  });
}

}  // namespace anvil::cuda
