// Unary ops: the op table's functors (kernels/ops/unary_ops.h, shared with
// the CPU backend), one launch per (op, dtype) through launch_elementwise.
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/device/unary_functors.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/elementwise_launch.cuh"
#include "kernels/cuda/elementwise_ops.h"
#include "kernels/ops/unary_ops.h"

namespace anvil::cuda {
namespace {

template <typename T, ops::Domain D, ops::Result R, template <class> class F>
void run_unary(const char* name, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  if constexpr (!ops::accepts<T>(D)) {
    fail(name, ": not supported for dtype ", in.dtype);
  } else {
    const DType expected = R == ops::Result::Bool ? kBool : in.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected,
                " for input dtype ", in.dtype);
    using Out = std::conditional_t<R == ops::Result::Bool, bool, T>;
    using Op = F<dev::compute_t<T>>;
    launch_elementwise<Out, T>(name, t.stream, t.device, out, in,
                               dev::UnaryMap<T, Out, Op>{ops::make_unary<F, dev::compute_t<T>>(p)});
  }
}

}  // namespace

void launch_unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
#define ANVIL_CUDA_UNARY_CASE(Enum, function, domain, result, api) \
  case UnaryOp::Enum:                                               \
    return run_unary<T, ops::Domain::domain, ops::Result::result, ops::Enum>(name, out, in, p, t);
      ANVIL_UNARY_OPS(ANVIL_CUDA_UNARY_CASE)
#undef ANVIL_CUDA_UNARY_CASE
    }
    fail("unary: unknown op ", static_cast<int>(op));
  });
}

}  // namespace anvil::cuda
