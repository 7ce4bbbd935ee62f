// Unary ops: the op table's functors (kernels/ops/unary_ops.h, shared with
// the CPU backend), one launch per (op, dtype) through launch_elementwise.
#include "core/base/error.h"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/table_launch.cuh"
#include "kernels/ops/unary_ops.h"

namespace anvil::cuda {

void launch_unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
#define ANVIL_CUDA_UNARY_CASE(Enum, function, domain, result, api) \
  case UnaryOp::Enum:                                               \
    return run_table_op<T, ops::Domain::domain, ops::Result::result>(                          \
        name, out, ops::make_unary<ops::Enum, dev::compute_t<T>>(p), t, in);
      ANVIL_UNARY_OPS(ANVIL_CUDA_UNARY_CASE)
#undef ANVIL_CUDA_UNARY_CASE
    }
    fail("unary: unknown op ", static_cast<int>(op));
  });
}

}  // namespace anvil::cuda
