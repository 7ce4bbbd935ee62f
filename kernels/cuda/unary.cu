// Unary ops: one functor per UnaryOp (device/unary_functors.cuh), one launch
// per (op, dtype) through launch_elementwise. Dtype rules and error messages
// follow kernels/cpu/elementwise.cpp.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/device/unary_functors.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/elementwise_launch.cuh"
#include "kernels/cuda/elementwise_ops.h"

namespace anvil::cuda {
namespace {

template <typename T, typename Op>
void run_unary(const char* name, const View& out, const View& in, const Op& op, LaunchTarget t) {
  if constexpr (!dev::accepts<T>(Op::domain)) {
    fail(name, ": not supported for dtype ", in.dtype);
  } else {
    const DType expected = Op::kBool ? kBool : in.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected,
                " for input dtype ", in.dtype);
    using Out = std::conditional_t<Op::kBool, bool, T>;
    launch_elementwise<Out, T>(name, t.stream, t.device, out, in, dev::UnaryMap<T, Out, Op>{op});
  }
}

// A clamp bound (possibly infinite) in the compute type C: floats keep it,
// integers saturate to their range (the CPU's Clamp::bound).
template <typename C>
C clamp_bound(double v) {
  if constexpr (std::is_floating_point_v<C>) {
    return static_cast<C>(v);
  } else {
    using L = std::numeric_limits<C>;
    return v <= double(L::lowest()) ? L::lowest() : v >= double(L::max()) ? L::max() : static_cast<C>(v);
  }
}

}  // namespace

void launch_unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t) {
  const char* name = op_name(op);
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case UnaryOp::Neg: return run_unary<T>(name, out, in, dev::NegF{}, t);
      case UnaryOp::Abs: return run_unary<T>(name, out, in, dev::AbsF{}, t);
      case UnaryOp::Exp: return run_unary<T>(name, out, in, dev::ExpF{}, t);
      case UnaryOp::Log: return run_unary<T>(name, out, in, dev::LogF{}, t);
      case UnaryOp::Sqrt: return run_unary<T>(name, out, in, dev::SqrtF{}, t);
      case UnaryOp::Rsqrt: return run_unary<T>(name, out, in, dev::RsqrtF{}, t);
      case UnaryOp::Sin: return run_unary<T>(name, out, in, dev::SinF{}, t);
      case UnaryOp::Cos: return run_unary<T>(name, out, in, dev::CosF{}, t);
      case UnaryOp::Tanh: return run_unary<T>(name, out, in, dev::TanhF{}, t);
      case UnaryOp::Sigmoid: return run_unary<T>(name, out, in, dev::SigmoidF{}, t);
      case UnaryOp::Relu: return run_unary<T>(name, out, in, dev::ReluF{}, t);
      case UnaryOp::GeluTanh: return run_unary<T>(name, out, in, dev::GeluTanhF{}, t);
      case UnaryOp::GeluErf: return run_unary<T>(name, out, in, dev::GeluErfF{}, t);
      case UnaryOp::Silu: return run_unary<T>(name, out, in, dev::SiluF{}, t);
      case UnaryOp::Sign: return run_unary<T>(name, out, in, dev::SignF{}, t);
      case UnaryOp::Reciprocal: return run_unary<T>(name, out, in, dev::ReciprocalF{}, t);
      case UnaryOp::Square: return run_unary<T>(name, out, in, dev::SquareF{}, t);
      case UnaryOp::LogicalNot: return run_unary<T>(name, out, in, dev::LogicalNotF{}, t);
      case UnaryOp::Clamp:
        if constexpr (std::is_same_v<T, bool>) {
          fail(name, ": not supported for dtype bool");
        } else {
          using C = dev::compute_t<T>;
          return run_unary<T>(name, out, in, dev::ClampF<C>{clamp_bound<C>(p.lo), clamp_bound<C>(p.hi)}, t);
        }
    }
    fail("unary: unknown op ", static_cast<int>(op));
  });
}

}  // namespace anvil::cuda
