#pragma once
// Element-wise reduction functions handed to Gloo, one per (dtype, op), and
// the in-place division that turns a sum into an average (internal).
//
// Half and BFloat16 are added in float and rounded back after every pairwise
// step, as PyTorch's Gloo backend does (their sums convert in blocks with
// core's array conversions, core/convert_arrays.h, vectorised by the CPU
// backend: the same bits, several times faster). Integers wrap on overflow
// (two's complement), as PyTorch's integer tensors do.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/half.h"
#include "core/convert_arrays.h"
#include "distributed/process_group/process_group.h"

namespace anvil::distributed::gloo_detail {

using ReduceFunc = std::function<void(void*, const void*, const void*, size_t)>;

template <typename T> T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else {
    return T(static_cast<float>(a) + static_cast<float>(b));
  }
}

// NaN wins, as in torch.max/min: a NaN anywhere makes the result NaN.
template <typename T> T pick_max(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return a < b ? b : a;
  } else {
    float fa = static_cast<float>(a), fb = static_cast<float>(b);
    if constexpr (std::is_same_v<T, double>) {
      if (a != a) return a;
      if (b != b) return b;
      return a < b ? b : a;
    }
    if (fa != fa) return a;
    if (fb != fb) return b;
    return fa < fb ? b : a;
  }
}
template <typename T> T pick_min(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return b < a ? b : a;
  } else {
    if constexpr (std::is_same_v<T, double>) {
      if (a != a) return a;
      if (b != b) return b;
      return b < a ? b : a;
    }
    float fa = static_cast<float>(a), fb = static_cast<float>(b);
    if (fa != fa) return a;
    if (fb != fb) return b;
    return fb < fa ? b : a;
  }
}

// c = a + b for float16/bfloat16: add<T> on blocks converted to float and
// back. c may be a or b.
template <typename T> void add_through_float(T* c, const T* a, const T* b, size_t n) {
  constexpr size_t kBlock = 512;
  float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const auto m = static_cast<int64_t>(std::min(kBlock, n - i));
    convert_array(fa, a + i, m);
    convert_array(fb, b + i, m);
    for (int64_t k = 0; k < m; ++k) fa[k] += fb[k];
    convert_array(c + i, fa, m);
  }
}

template <typename T> ReduceFunc make_func(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:  // summed here, divided afterwards
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        if (convert_array_vectorized())
          return [](void* c, const void* a, const void* b, size_t n) {
            add_through_float(static_cast<T*>(c), static_cast<const T*>(a), static_cast<const T*>(b), n);
          };
      }
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* C = static_cast<T*>(c);
        auto* A = static_cast<const T*>(a);
        auto* B = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) C[i] = add<T>(A[i], B[i]);
      };
    case ReduceOp::Max:
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* C = static_cast<T*>(c);
        auto* A = static_cast<const T*>(a);
        auto* B = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) C[i] = pick_max<T>(A[i], B[i]);
      };
    case ReduceOp::Min:
      return [](void* c, const void* a, const void* b, size_t n) {
        auto* C = static_cast<T*>(c);
        auto* A = static_cast<const T*>(a);
        auto* B = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) C[i] = pick_min<T>(A[i], B[i]);
      };
  }
  fail("unknown ReduceOp");
}

// Calls f(T{}) with the C++ type of a reducible dtype (every dtype but bool).
template <typename F> auto dispatch_reducible(DType dtype, const char* what, F&& f) {
  ANVIL_CHECK(dtype != DType::Bool, what, ": cannot reduce ", dtype_name(dtype),
              " tensors (supported: float32, float64, float16, bfloat16, int32, int64, uint8)");
  return visit_dtype(dtype, [&](auto zero) {
    if constexpr (std::is_same_v<decltype(zero), bool>)
      return f(uint8_t{});  // not reached: rejected above
    else
      return f(zero);
  });
}

inline ReduceFunc reduce_func(DType dtype, ReduceOp op, const char* what) {
  return dispatch_reducible(dtype, what, [&](auto zero) { return make_func<decltype(zero)>(op); });
}

// data[i] /= divisor, in the tensor's own dtype (float types only).
inline void divide_in_place(void* data, DType dtype, size_t n, int divisor) {
  dispatch_reducible(dtype, "Avg", [&](auto zero) {
    using T = decltype(zero);
    auto* p = static_cast<T*>(data);
    if constexpr (std::is_same_v<T, double>) {
      for (size_t i = 0; i < n; ++i) p[i] /= divisor;
    } else if constexpr (std::is_integral_v<T>) {
      fail("Avg on integer tensors");  // rejected before the collective runs
    } else {
      for (size_t i = 0; i < n; ++i) p[i] = T(static_cast<float>(p[i]) / static_cast<float>(divisor));
    }
  });
}

}  // namespace anvil::distributed::gloo_detail
