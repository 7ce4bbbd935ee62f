#pragma once
// run_table_op<T, Domain, Result>(name, out, functor, target, in...): the
// dtype check and launch of one op-table row (kernels/ops/) on CUDA, shared
// by the unary rows and the binary families (launch_binary_family below). It refuses a
// dtype outside the row's domain with the CPU's message, and launches
// out = Out(op(C(in)...)) with C = compute_t<T>. Internal.
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/launch/elementwise_launch.cuh"
#include "kernels/cuda/elementwise_ops.h"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/ops/binary_ops.h"
#include "kernels/ops/unary_ops.h"
#include "kernels/ops/op_traits.h"

namespace anvil::cuda {

namespace dev {
// out = Out(op(C(x)...)): the conversion wrapper around a table functor.
template <typename T, typename Out, typename Op> struct TableMap {
  Op op;
  template <typename... X> __device__ __forceinline__ Out operator()(X... x) const {
    return cast<Out>(op(cast<compute_t<T>>(x)...));
  }
};
}  // namespace dev

template <typename, typename U> using Same = U;

template <typename T, ops::Domain D, ops::Result R, typename Op, typename... In>
void run_table_op(const char* name, const View& out, const Op& op, LaunchTarget t, const View& first,
                  const In&... rest) {
  if constexpr (!ops::accepts<T>(D)) {
    fail(name, ": not supported for dtype ", first.dtype);
  } else {
    const DType expected = R == ops::Result::Bool ? kBool : first.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected, " for input dtype ",
                first.dtype);
    using Out = std::conditional_t<R == ops::Result::Bool, bool, T>;
    launch_elementwise<Out, T, Same<In, T>...>(name, t.stream, t.device, out, first, rest...,
                                               dev::TableMap<T, Out, Op>{op});
  }
}

// Every row of the unary op table for input type T. Instantiated for the
// floating dtypes in unary_floating.cu and for the others in
// unary_integral.cu, so that the two halves compile in parallel.
template <typename T>
void launch_unary_rows(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  const char* name = op_name(op);
  switch (op) {
#define ANVIL_CUDA_UNARY_CASE(Enum, function, domain, result, api) \
  case UnaryOp::Enum: \
    return run_table_op<T, ops::Domain::domain, ops::Result::result>( \
        name, out, ops::make_unary<ops::Enum, dev::compute_t<T>>(p), t, in);
    ANVIL_UNARY_OPS(ANVIL_CUDA_UNARY_CASE)
#undef ANVIL_CUDA_UNARY_CASE
  }
  fail("unary: unknown op ", static_cast<int>(op));
}

// The rows of one Family of the binary op table (kernels/ops/binary_ops.h)
// on CUDA. Each family is instantiated in its own .cu file (binary.cu,
// compare.cu, binary_backward.cu), so each compiles only its rows' kernels.
template <ops::BinaryFamily Family>
void launch_binary_family(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = dev::compute_t<T>;
    switch (op) {
#define ANVIL_CUDA_BINARY_CASE(Enum, name_, domain, result, family) \
  case BinaryOp::Enum: \
    if constexpr (ops::BinaryFamily::family == Family) \
      return run_table_op<T, ops::Domain::domain, ops::Result::result>(name, out, ops::Enum<C>{}, t, a, b); \
    break;
      ANVIL_BINARY_OPS(ANVIL_CUDA_BINARY_CASE)
#undef ANVIL_CUDA_BINARY_CASE
    }
    fail("binary: ", name, " belongs to another family of binary ops");
  });
}

}  // namespace anvil::cuda
