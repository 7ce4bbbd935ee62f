#pragma once
// Reductions, backend-neutral: the argument checks (same messages on every
// backend) and the plan of kept and reduced dims both backends walk.
#include <cstdint>
#include <vector>

#include "kernels/ops/table_kernels.h"

namespace anvil::shapes {

const char* op_name(ReduceOp op);  // "sum", "mean", ... (from kernels/ops/reduce_ops.h)

// in's dtype is one the op accepts; out keeps in's rank, each dim either in's
// size or 1 (reduced); argmax and argmin reduce at most one dim into an int64
// output.
void check_reduce(ReduceOp op, const View& out, const View& in);

struct ReduceDim {
  int64_t size, in_stride, out_stride;  // strides in elements; out_stride 0 for reduced dims
};

// The kept and reduced dims of in (size-1 dims dropped), each list sorted by
// input stride, innermost first, with dims that walk memory as one merged.
struct ReducePlan {
  std::vector<ReduceDim> kept, reduced;
  int64_t n_out = 1, n_red = 1;

  ReducePlan(const View& out, const View& in);
  // Whether a kept dim moves faster through memory than any reduced one
  // (the column-wise drivers pay off then).
  bool by_columns() const { return !kept.empty() && !reduced.empty() && kept[0].in_stride < reduced[0].in_stride; }
};

// An empty reduction has no max, min or arg; call with a plan whose n_out > 0.
void check_reduce_not_empty(ReduceOp op, const ReducePlan& plan, const Shape& in);

}  // namespace anvil::shapes
