#include "kernels/shapes/reduce_plan.h"

#include <algorithm>

#include "core/base/error.h"

namespace anvil::shapes {
namespace {

std::vector<ReduceDim> sort_and_coalesce(std::vector<ReduceDim> dims) {
  std::stable_sort(dims.begin(), dims.end(),
                   [](const ReduceDim& a, const ReduceDim& b) { return a.in_stride < b.in_stride; });
  std::vector<ReduceDim> merged;
  for (const ReduceDim& d : dims) {
    if (!merged.empty()) {
      ReduceDim& inner = merged.back();
      if (d.in_stride == inner.in_stride * inner.size && d.out_stride == inner.out_stride * inner.size) {
        inner.size *= d.size;
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

}  // namespace

const char* op_name(ReduceOp op) { return ops::reduce_info(op).name; }

void check_reduce(ReduceOp op, const View& out, const View& in) {
  const ops::ReduceInfo& info = ops::reduce_info(op);
  const char* name = info.name;
  ANVIL_CHECK(ops::reduce_accepts(op, in.dtype), name, ": not supported for dtype ", in.dtype,
              " (floating dtypes only)");
  ANVIL_CHECK(out.dim() == in.dim(), name, ": output rank ", out.dim(), " differs from input rank ", in.dim(),
              " (reduced dims keep size 1)");
  int reduced_dims = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    ANVIL_CHECK(out.shape[d] == in.shape[d] || out.shape[d] == 1, name, ": output shape ", out.shape,
                " does not match input shape ", in.shape, " at dim ", d);
    reduced_dims += out.shape[d] == 1 && in.shape[d] != 1;
  }
  if (info.one_dim)
    ANVIL_CHECK(reduced_dims <= 1, name, ": reduces exactly one dim; output shape ", out.shape, " for input shape ",
                in.shape, " reduces ", reduced_dims);
  if (info.result == ReduceResult::Index)
    ANVIL_CHECK(out.dtype == kInt64, name, ": output dtype must be int64, got ", out.dtype);
}

ReducePlan::ReducePlan(const View& out, const View& in) {
  std::vector<ReduceDim> kept_dims, reduced_dims;
  for (int64_t d = 0; d < in.dim(); ++d) {
    const bool is_reduced = out.shape[d] == 1 && in.shape[d] != 1;
    (is_reduced ? n_red : n_out) *= in.shape[d];
    if (in.shape[d] == 1) continue;
    (is_reduced ? reduced_dims : kept_dims)
        .push_back(ReduceDim{in.shape[d], in.strides[d], is_reduced ? 0 : out.strides[d]});
  }
  kept = sort_and_coalesce(kept_dims);
  reduced = sort_and_coalesce(reduced_dims);
}

void check_reduce_not_empty(ReduceOp op, const ReducePlan& plan, const Shape& in) {
  if (plan.n_red == 0)
    ANVIL_CHECK(ops::reduce_info(op).empty != ReduceEmpty::NoIdentity, op_name(op),
                ": cannot reduce over an empty dimension (input shape ", in, ")");
}

}  // namespace anvil::shapes
