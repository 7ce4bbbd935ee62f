#pragma once
// The scans (cumulative ops along one dim): cumsum, cumprod and logcumsumexp.
// A scan is an associative combine with an identity, written once here as
// ANVIL_HD code that the CPU backend (kernels/cpu/scan.cpp), the CUDA kernel
// (kernels/cuda/scan.cu) and the emulated GPU compile: out[i] = in[0] (+) ...
// (+) in[i]. Associativity is what lets the CUDA kernel scan a row in
// parallel (any split of the work gives the same answer up to rounding).
#include <cmath>
#include <cstdint>

#include "core/base/host_device.h"
#include "kernels/ops/math.h"

namespace anvil {

enum class ScanOp : uint8_t { Sum, Prod, LogSumExp };

namespace ops {

constexpr const char* scan_name(ScanOp op) {
  return op == ScanOp::Sum ? "cumsum" : op == ScanOp::Prod ? "cumprod" : "logcumsumexp";
}

// The combine of each scan on accumulation type A (double or float for
// floats, int64 for integers: core converts integer inputs to int64 first).
template <ScanOp Op, class A> struct Scan {
  ANVIL_HD static A identity() {
    if constexpr (Op == ScanOp::Sum)
      return A(0);
    else if constexpr (Op == ScanOp::Prod)
      return A(1);
    else
      return A(-INFINITY);
  }
  ANVIL_HD static A combine(A a, A b) {
    if constexpr (Op == ScanOp::Sum) {
      return math::wrapping_add(a, b);
    } else if constexpr (Op == ScanOp::Prod) {
      return math::wrapping_mul(a, b);
    } else {
      // log(exp(a) + exp(b)) without overflow: max + log1p(exp(min - max)).
      // -inf (the identity, exp = 0) adds nothing; equal values (also two
      // +infs, where min - max would be NaN) give max + log 2; NaN propagates.
      if (math::isnan(a) || math::isnan(b)) return math::isnan(a) ? a : b;
      if (a == A(-INFINITY)) return b;
      if (b == A(-INFINITY)) return a;
      const A hi = a < b ? b : a, lo = a < b ? a : b;
      if (hi == lo) return hi + A(0.69314718055994530942);
      return hi + math::log1p(math::exp(lo - hi));
    }
  }
};

}  // namespace ops
}  // namespace anvil
