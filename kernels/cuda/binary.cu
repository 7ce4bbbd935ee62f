// Arithmetic binary ops (add, sub, mul, div, pow, maximum, minimum): one
// functor each (device/binary_functors.cuh), launched through
// launch_elementwise. Dtype rules follow kernels/cpu/elementwise.cpp,
// including true division for integer inputs (computed in double).
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/binary_launch.cuh"
#include "kernels/cuda/dtype_dispatch.h"

namespace anvil::cuda {

namespace {

template <typename T>
void integer_true_div(const View& out, const View& a, const View& b, LaunchTarget t) {
  ANVIL_CHECK(is_floating(out.dtype), "div: integer inputs of dtype ", a.dtype,
              " need a floating output (true division); got output dtype ", out.dtype);
  visit_floating_device_dtype("div", out.dtype, [&](auto tag) {
    using O = decltype(tag);
    launch_elementwise<O, T, T>("div", t.stream, t.device, out, a, b, dev::IntTrueDivF<O>{});
  });
}

}  // namespace

void launch_binary_arithmetic(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::Add: return run_binary<T>(name, out, a, b, dev::AddF{}, t);
      case BinaryOp::Sub: return run_binary<T>(name, out, a, b, dev::SubF{}, t);
      case BinaryOp::Mul: return run_binary<T>(name, out, a, b, dev::MulF{}, t);
      case BinaryOp::Div:
        if constexpr (std::is_integral_v<T>) return integer_true_div<T>(out, a, b, t);
        else return run_binary<T>(name, out, a, b, dev::DivF{}, t);
      case BinaryOp::Pow: return run_binary<T>(name, out, a, b, dev::PowF{}, t);
      case BinaryOp::Maximum: return run_binary<T>(name, out, a, b, dev::MaximumF{}, t);
      case BinaryOp::Minimum: return run_binary<T>(name, out, a, b, dev::MinimumF{}, t);
      default: break;
    }
    fail("binary: ", name, " is not an arithmetic op");
  });
}

}  // namespace anvil::cuda
