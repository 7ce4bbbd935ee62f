// Max and min (NaN wins), and the inf-norms (max or min of |x|).
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda::reduce_detail {

void reduce_extreme_family(ReduceOp op, const Plan& plan, const View& out, const View& in, const ReduceParams& p,
                           const Launch& l) {
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (op == ReduceOp::Max) return run_reduce<T>(dev::extreme_reduce<T, true>(false), plan, out, in, l);
    if (op == ReduceOp::Min) return run_reduce<T>(dev::extreme_reduce<T, false>(false), plan, out, in, l);
    if constexpr (!dev::is_floating_v<T>) {
      fail(op_name(op), ": not supported for dtype ", in.dtype, " (floating dtypes only)");
    } else {
      ANVIL_CHECK(op == ReduceOp::Norm && std::isinf(p.p), "reduce: ", op_name(op), " is not a max/min reduction");
      if (p.p > 0) return run_reduce<T>(dev::extreme_reduce<T, true>(true), plan, out, in, l);
      return run_reduce<T>(dev::extreme_reduce<T, false>(true), plan, out, in, l);
    }
  });
}

}  // namespace anvil::cuda::reduce_detail
