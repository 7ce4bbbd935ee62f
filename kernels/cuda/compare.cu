// Comparisons and logical ops (bool results), all dtypes.
#include "kernels/cuda/binary_launch.cuh"
#include "kernels/cuda/dtype_dispatch.h"

namespace anvil::cuda {

void launch_binary_compare(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::Eq: return run_binary<T>(name, out, a, b, dev::EqF{}, t);
      case BinaryOp::Ne: return run_binary<T>(name, out, a, b, dev::NeF{}, t);
      case BinaryOp::Lt: return run_binary<T>(name, out, a, b, dev::LtF{}, t);
      case BinaryOp::Le: return run_binary<T>(name, out, a, b, dev::LeF{}, t);
      case BinaryOp::Gt: return run_binary<T>(name, out, a, b, dev::GtF{}, t);
      case BinaryOp::Ge: return run_binary<T>(name, out, a, b, dev::GeF{}, t);
      case BinaryOp::LogicalAnd: return run_binary<T>(name, out, a, b, dev::LogicalAndF{}, t);
      case BinaryOp::LogicalOr: return run_binary<T>(name, out, a, b, dev::LogicalOrF{}, t);
      default: break;
    }
    fail("binary: ", name, " is not a comparison");
  });
}

}  // namespace anvil::cuda
