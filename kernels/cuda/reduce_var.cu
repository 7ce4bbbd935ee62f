// Variance (Welford per thread, Chan merges across threads and blocks), floating only.
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/reduce_kernels.cuh"

namespace anvil::cuda::reduce_detail {

void reduce_var_family(const Plan& plan, const View& out, const View& in, const ReduceParams& p, const Launch& l) {
  visit_floating_device_dtype("var", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_reduce<T>(dev::VarReduce<T>{p.correction}, plan, out, in, l);
  });
}

}  // namespace anvil::cuda::reduce_detail
