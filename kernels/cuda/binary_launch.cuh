#pragma once
// run_binary<T>(name, out, a, b, functor, target): the dtype check and launch
// shared by binary.cu, compare.cu and binary_backward.cu. Internal.
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/device/binary_functors.cuh"
#include "kernels/cuda/elementwise_launch.cuh"
#include "kernels/cuda/elementwise_ops.h"

namespace anvil::cuda {

template <typename T, typename Op>
void run_binary(const char* name, const View& out, const View& a, const View& b, const Op& op, LaunchTarget t) {
  if constexpr (!dev::accepts<T>(Op::domain)) {
    fail(name, ": not supported for dtype ", a.dtype);
  } else {
    const DType expected = Op::kBool ? kBool : a.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected,
                " for input dtype ", a.dtype);
    using Out = std::conditional_t<Op::kBool, bool, T>;
    launch_elementwise<Out, T, T>(name, t.stream, t.device, out, a, b, dev::BinaryMap<T, Out, Op>{op});
  }
}

}  // namespace anvil::cuda
