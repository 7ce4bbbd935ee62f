// Sum-shaped reductions (sum and mean: one SumReduce<T> per dtype with the
// mode set at launch; finite p-norms: one NormReduce<T>, in double) and prod. Mean and norms are floating
// only (check_reduce has said so before this runs).
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda::reduce_detail {

void reduce_sum_family(ReduceOp op, const Plan& plan, const View& out, const View& in, const ReduceParams& p,
                       const Launch& l) {
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (op == ReduceOp::Prod) return run_reduce<T>(dev::ProdReduce<T>{}, plan, out, in, l);
    if (op == ReduceOp::Sum) return run_reduce<T>(dev::sum_reduce<T>(dev::SumMode::Sum), plan, out, in, l);
    if constexpr (!dev::is_floating_v<T>) {
      fail(op_name(op), ": not supported for dtype ", in.dtype, " (floating dtypes only)");
    } else {
      if (op == ReduceOp::Mean) return run_reduce<T>(dev::sum_reduce<T>(dev::SumMode::Mean), plan, out, in, l);
      ANVIL_CHECK(op == ReduceOp::Norm, "reduce: ", op_name(op), " is not a sum-shaped reduction");
      const dev::SumMode mode = p.p == 2   ? dev::SumMode::SquareSqrt
                                : p.p == 1 ? dev::SumMode::AbsSum
                                : p.p == 0 ? dev::SumMode::NonZero
                                           : dev::SumMode::PowRoot;
      return run_reduce<T>(dev::norm_reduce<T>(mode, p.p), plan, out, in, l);
    }
  });
}

}  // namespace anvil::cuda::reduce_detail
