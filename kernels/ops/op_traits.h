#pragma once
/// @file
/// What every elementwise op table (unary_ops.h, ...) says about an op besides
/// its math: which dtypes it accepts and what dtype its result has. Shared by
/// the CPU backend, the CUDA kernels (nvcc) and the emulated GPU (g++).
#include <cstdint>
#include <type_traits>

#include "core/base/host_device.h"

namespace anvil::ops {

/// Floating: float dtypes only (core computes integer inputs in float32).
/// Numeric: also integers. Any: also bool.
/// Integral: integers and bool, never a float dtype (the bitwise ops: their
/// bits have no meaning on a float, so core refuses it instead of converting).
enum class Domain : uint8_t { Floating, Numeric, Any, Integral };
/// Same: the input's dtype. Bool: a bool tensor (tests, comparisons).
enum class Result : uint8_t { Same, Bool };

struct OpInfo {
  const char* name;  ///< the public function's name, and the name in every error
  Domain domain;
  Result result;
};

/// Whether storage type T (bool, an integer, float, double, Half, BFloat16) is in the domain.
template <typename T> constexpr bool accepts(Domain d) {
  if constexpr (std::is_same_v<T, bool>)
    return d == Domain::Any || d == Domain::Integral;
  else if constexpr (std::is_integral_v<T>)
    return d != Domain::Floating;
  else
    return d != Domain::Integral;
}

/// Whether a row's result can carry a gradient: a result in the input's dtype,
/// which may be floating. (Bool results and integer-only rows never are.)
constexpr bool differentiable(const OpInfo& info) {
  return info.result == Result::Same && info.domain != Domain::Integral;
}

}  // namespace anvil::ops
