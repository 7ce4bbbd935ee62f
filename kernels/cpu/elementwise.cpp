// Elementwise kernels: the op tables' functors (kernels/ops/unary_ops.h,
// // binary_ops.h) over strided views, one dtype dispatch per call. Functors
// compute in compute_t<T>: float for float16/bfloat16, the type itself
// otherwise. A dtype outside a row's domain is an error that names the op and
// the dtype.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/ops/binary_ops.h"
#include "kernels/ops/unary_ops.h"
#include "kernels/shapes/elementwise_checks.h"

namespace anvil::cpu {
namespace {

template <typename T> struct compute { using type = T; };
template <> struct compute<Half> { using type = float; };
template <> struct compute<BFloat16> { using type = float; };
template <typename T> using compute_t = typename compute<T>::type;

using shapes::op_name;

// Same<In, T>: T once per element of a pack of In (every input has dtype T).
template <typename, typename U> using Same = U;

// out = op(in...) elementwise for an op-table row: refuses a dtype outside
// the row's domain, computes in C = compute_t<T>, and writes T or bool.
// `make_op<C>()` builds the row's functor in compute type C.
template <typename T, ops::Domain D, ops::Result R, typename MakeOp, typename... In>
void table_kernel(const char* name, const View& out, MakeOp make_op, const View& first, const In&... rest) {
  if constexpr (!ops::accepts<T>(D)) {
    fail(name, ": not supported for dtype ", dtype_of<T>::value);
  } else {
    using C = compute_t<T>;
    const auto op = make_op.template operator()<C>();
    const DType expected = R == ops::Result::Bool ? kBool : first.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected, " for input dtype ",
                first.dtype);
    using Out = std::conditional_t<R == ops::Result::Bool, bool, T>;
    map_elements<Out, T, Same<In, T>...>(out, {&first, &rest...},
                                         [op](T x, Same<In, T>... y) { return Out(op(C(x), C(y)...)); });
  }
}

// Integer (and bool) division is true division, as in PyTorch: the op layer
// asks for a floating output, and the quotient is computed in double.
template <typename T> void integer_div_kernel(const View& out, const View& a, const View& b) {
  ANVIL_CHECK(is_floating(out.dtype), "div: integer inputs of dtype ", a.dtype,
              " need a floating output (true division); got output dtype ", out.dtype);
  visit_dtype(out.dtype, [&](auto tag) {
    using O = decltype(tag);
    if constexpr (!std::is_integral_v<O>)
      map_elements<O, T, T>(out, {&a, &b}, [](T x, T y) { return cast_value<O>(double(x) / double(y)); });
  });
}

// float32 through a vector kernel f(out, ins, n) (vector_math.h): contiguous
// runs in one call each; otherwise in chunks, each operand read in place when
// its stride is one float, a broadcast one (stride 0) as a buffer filled once
// per run, a strided one gathered into a buffer (and a strided out scattered
// from one). The transcendental kernels cost several element-operations
// each, which the parallel threshold counts.
template <size_t N, typename F> void vector_map(const View& out, const std::array<const View*, N>& ins, F f) {
  std::array<const View*, N + 1> views{&out};
  typename StridedLoop<N + 1>::Ptrs base{static_cast<char*>(out.data)};
  for (size_t k = 0; k < N; ++k) views[k + 1] = ins[k], base[k + 1] = static_cast<char*>(ins[k]->data);
  const StridedLoop<N + 1> loop(views);
  constexpr int64_t kCost = 8, kChunk = 256, kUnit = sizeof(float);
  loop.run_parallel(
      base,
      [&](const typename StridedLoop<N + 1>::Run& r) {
        bool contiguous = true;
        for (int64_t s : r.stride) contiguous &= s == kUnit;
        std::array<const float*, N> in;
        if (contiguous) {
          for (size_t k = 0; k < N; ++k) in[k] = reinterpret_cast<const float*>(r.ptr[k + 1]);
          return f(reinterpret_cast<float*>(r.ptr[0]), in, r.n);
        }
        float buf[N + 1][kChunk];
        for (size_t k = 0; k < N; ++k)
          if (r.stride[k + 1] == 0)
            std::fill_n(buf[k + 1], std::min(kChunk, r.n), *reinterpret_cast<const float*>(r.ptr[k + 1]));
        const bool out_in_place = r.stride[0] == kUnit;
        for (int64_t i0 = 0; i0 < r.n; i0 += kChunk) {
          const int64_t m = std::min(kChunk, r.n - i0);
          for (size_t k = 0; k < N; ++k) {
            const char* p = r.ptr[k + 1];
            const int64_t s = r.stride[k + 1];
            if (s == kUnit) {
              in[k] = reinterpret_cast<const float*>(p) + i0;
            } else {
              if (s != 0)
                for (int64_t i = 0; i < m; ++i) buf[k + 1][i] = *reinterpret_cast<const float*>(p + (i0 + i) * s);
              in[k] = buf[k + 1];
            }
          }
          float* o = out_in_place ? reinterpret_cast<float*>(r.ptr[0]) + i0 : buf[0];
          f(o, in, m);
          if (!out_in_place)
            for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(r.ptr[0] + (i0 + i) * r.stride[0]) = buf[0][i];
        }
      },
      kCost);
}

// Whether a run of a large output goes out with streaming stores
// (vector_math.h, stream_output). Not in place (relu_, add_): the read has
// already brought each line into the cache, so a plain store costs no extra
// traffic, and a streaming one would only send the line away first.
template <size_t N>
bool streams_into(const View& out, const float* o, const std::array<const float*, N>& in, int64_t n) {
  for (const float* p : in)
    if (p == o) return false;
  return vec::stream_output(out.numel(), n);
}

}  // namespace

void unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) {
  shapes::check_unary(op, out, in);
  const char* name = op_name(op);
  if (in.dtype == kFloat32 && out.dtype == kFloat32 && vec::enabled() && vec::has_unary(op)) {
    return vector_map<1>(out, {&in}, [&](float* o, const std::array<const float*, 1>& i, int64_t n) {
      vec::unary(op, p, o, i[0], n, streams_into(out, o, i, n));
    });
  }
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
#define ANVIL_CPU_UNARY_CASE(Enum, function, domain, result, api) \
  case UnaryOp::Enum: \
    return table_kernel<T, ops::Domain::domain, ops::Result::result>( \
        name, out, [&]<class C>() { return ops::make_unary<ops::Enum, C>(p); }, in);
      ANVIL_UNARY_OPS(ANVIL_CPU_UNARY_CASE)
#undef ANVIL_CPU_UNARY_CASE
    }
    fail("unary: unknown op ", static_cast<int>(op));
  });
}

void binary(BinaryOp op, const View& out, const View& a, const View& b) {
  const char* name = op_name(op);
  shapes::check_binary(op, out, a, b);
  if (a.dtype == kFloat32 && out.dtype == kFloat32 && vec::enabled() && vec::has_binary(op)) {
    return vector_map<2>(out, {&a, &b}, [&](float* o, const std::array<const float*, 2>& i, int64_t n) {
      vec::binary(op, o, i[0], i[1], n, streams_into(out, o, i, n));
    });
  }
  visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      if (op == BinaryOp::Div) return integer_div_kernel<T>(out, a, b);
    }
    switch (op) {
#define ANVIL_CPU_BINARY_CASE(Enum, name_, domain, result, family) \
  case BinaryOp::Enum: \
    return table_kernel<T, ops::Domain::domain, ops::Result::result>( \
        name, out, []<class C>() { return ops::Enum<C>{}; }, a, b);
      ANVIL_BINARY_OPS(ANVIL_CPU_BINARY_CASE)
#undef ANVIL_CPU_BINARY_CASE
    }
    fail("binary: unknown op ", static_cast<int>(op));
  });
}

void where(const View& out, const View& cond, const View& a, const View& b) {
  shapes::check_where(out, cond, a, b);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    // The condition is read as bytes: any nonzero byte selects a.
    map_elements<T, uint8_t, T, T>(out, {&cond, &a, &b}, [](uint8_t c, T x, T y) { return c ? x : y; });
  });
}

ANVIL_REGISTER_KERNEL(kernel::Unary, CPU, unary);
ANVIL_REGISTER_KERNEL(kernel::Binary, CPU, binary);
ANVIL_REGISTER_KERNEL(kernel::Where, CPU, where);

}  // namespace anvil::cpu
