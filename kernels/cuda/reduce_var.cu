// Variance (Welford per thread, Chan merges across threads and blocks), floating only.
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda::reduce_detail {

void reduce_var_family(const Plan& plan, const View& out, const View& in, const ReduceParams& p, const Launch& l) {
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!dev::is_floating_v<T>) {
      // The CPU's message (kernels/cpu/reduce.cpp), like reduce_sum.cu's for mean and norm.
      fail(op_name(ReduceOp::Var), ": not supported for dtype ", in.dtype, " (floating dtypes only)");
    } else {
      run_reduce<T>(dev::var_reduce<T>(p.correction), plan, out, in, l);
    }
  });
}

}  // namespace anvil::cuda::reduce_detail
