// ArgMax and ArgMin (one reduced dim, int64 out, first index on ties and NaN).
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda::reduce_detail {

void reduce_arg_family(ReduceOp op, const Plan& plan, const View& out, const View& in, const Launch& l) {
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (op == ReduceOp::ArgMax) return run_reduce<T>(dev::ArgReduce<T, true>{}, plan, out, in, l);
    return run_reduce<T>(dev::ArgReduce<T, false>{}, plan, out, in, l);
  });
}

}  // namespace anvil::cuda::reduce_detail
