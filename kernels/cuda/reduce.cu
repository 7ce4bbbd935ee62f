// CudaBackend::reduce: the CPU's validation (same checks and messages), then
// one of four families, each in its own file so nvcc compiles them in
// parallel: reduce_sum.cu (sum, mean, prod, finite norms), reduce_extreme.cu
// (max, min, inf-norms), reduce_arg.cu (argmax, argmin), reduce_var.cu.
// The kernels and the plan are in reduce_kernels.cuh.
#include <cmath>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda {

const char* op_name(ReduceOp op) {
  static constexpr const char* names[] = {"sum", "mean", "max", "min", "prod", "var", "norm", "argmax", "argmin"};
  return names[static_cast<int>(op)];
}

void CudaBackend::reduce(ReduceOp op, const View& out, const View& in, const ReduceParams& p) {
  ANVIL_NVTX_RANGE("reduce");
  const char* name = op_name(op);
  ANVIL_CHECK(out.dim() == in.dim(), name, ": output rank ", out.dim(), " differs from input rank ", in.dim(),
              " (reduced dims keep size 1)");
  int reduced_dims = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    ANVIL_CHECK(out.shape[d] == in.shape[d] || out.shape[d] == 1, name, ": output shape ", out.shape,
                " does not match input shape ", in.shape, " at dim ", d);
    reduced_dims += out.shape[d] == 1 && in.shape[d] != 1;
  }
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  if (arg) {
    ANVIL_CHECK(reduced_dims <= 1, name, ": reduces exactly one dim; output shape ", out.shape, " for input shape ",
                in.shape, " reduces ", reduced_dims);
    ANVIL_CHECK(out.dtype == kInt64, name, ": output dtype must be int64, got ", out.dtype);
  }
  const reduce_detail::Plan plan(out, in);
  if (plan.n_out == 0) return;
  if (plan.n_red == 0)
    ANVIL_CHECK(op != ReduceOp::Max && op != ReduceOp::Min && !arg, name,
                ": cannot reduce over an empty dimension (input shape ", in.shape, ")");
  DeviceGuard guard(in.device_index);
  const reduce_detail::Launch l{*this, stream(in.device_index), in.device_index, current_stream(in.device_index).id};
  using namespace reduce_detail;
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Mean: case ReduceOp::Prod: return reduce_sum_family(op, plan, out, in, p, l);
    case ReduceOp::Max: case ReduceOp::Min: return reduce_extreme_family(op, plan, out, in, p, l);
    case ReduceOp::ArgMax: case ReduceOp::ArgMin: return reduce_arg_family(op, plan, out, in, l);
    case ReduceOp::Var: return reduce_var_family(plan, out, in, p, l);
    case ReduceOp::Norm:
      if (std::isinf(p.p)) return reduce_extreme_family(op, plan, out, in, p, l);
      return reduce_sum_family(op, plan, out, in, p, l);
  }
  fail("reduce: unknown op ", static_cast<int>(op));
}

}  // namespace anvil::cuda
