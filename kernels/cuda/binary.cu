// The binary op table's Arithmetic rows (kernels/ops/binary_ops.h: add, sub,
// mul, div, pow, maximum, minimum) on CUDA, plus integer true division
// (integer inputs, floating output, computed in double, as on the CPU).
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/table_launch.cuh"
#include "kernels/ops/binary_ops.h"

namespace anvil::cuda {

namespace {

template <typename Out> struct IntTrueDivF {
  template <class T> __device__ __forceinline__ Out operator()(T a, T b) const {
    return dev::cast<Out>(static_cast<double>(a) / static_cast<double>(b));
  }
};

template <typename T> void integer_true_div(const View& out, const View& a, const View& b, LaunchTarget t) {
  ANVIL_CHECK(is_floating(out.dtype), "div: integer inputs of dtype ", a.dtype,
              " need a floating output (true division); got output dtype ", out.dtype);
  visit_floating_device_dtype("div", out.dtype, [&](auto tag) {
    using O = decltype(tag);
    launch_elementwise<O, T, T>("div", t.stream, t.device, out, a, b, IntTrueDivF<O>{});
  });
}

}  // namespace

void launch_binary_arithmetic(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  if (op == BinaryOp::Div && !is_floating(a.dtype)) {
    visit_device_dtype(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) integer_true_div<T>(out, a, b, t);
    });
    return;
  }
  launch_binary_family<ops::BinaryFamily::Arithmetic>(op, out, a, b, t);
}

}  // namespace anvil::cuda
