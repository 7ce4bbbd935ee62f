// kernel::Reduce: the CPU's validation (same checks and messages), then
// one of four families, each in its own file so nvcc compiles them in
// parallel: reduce_sum.cu (sum, mean, prod, finite norms), reduce_extreme.cu
// (max, min, inf-norms), reduce_arg.cu (argmax, argmin), reduce_var.cu.
// The kernels and the plan are in reduce_kernels.cuh.
#include <cmath>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda {

void reduce(ReduceOp op, const View& out, const View& in, const ReduceParams& p) {
  ANVIL_NVTX_RANGE("reduce");
  shapes::check_reduce(op, out, in);  // the CPU's checks and messages
  const reduce_detail::Plan plan(out, in);
  if (plan.n_out == 0) return;
  shapes::check_reduce_not_empty(op, plan, in.shape);
  DeviceGuard guard(in.device_index);
  const reduce_detail::Launch l{cuda_runtime(), stream(in.device_index), in.device_index};
  using namespace reduce_detail;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
    case ReduceOp::Prod:
      return reduce_sum_family(op, plan, out, in, p, l);
    case ReduceOp::Max:
    case ReduceOp::Min:
      return reduce_extreme_family(op, plan, out, in, p, l);
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return reduce_arg_family(op, plan, out, in, l);
    case ReduceOp::Var:
      return reduce_var_family(plan, out, in, p, l);
    case ReduceOp::Norm:
      if (std::isinf(p.p)) return reduce_extreme_family(op, plan, out, in, p, l);
      return reduce_sum_family(op, plan, out, in, p, l);
  }
  fail("reduce: unknown op ", static_cast<int>(op));
}

ANVIL_REGISTER_KERNEL(kernel::Reduce, CUDA, reduce);

}  // namespace anvil::cuda
