#pragma once
// Fills the backend's one offset calculator (device/offset_calculator.cuh)
// for N operands walked in the row-major order of one shape: size-1 dims are
// dropped and dims contiguous in every operand merged, so a contiguous tensor
// of any rank is one dim and most broadcasts are two. Dims go innermost first.
#include <array>
#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/device/offset_calculator.cuh"
#include "kernels/view.h"

namespace anvil::cuda {

// `strides[k]` are operand k's strides over `shape` (0 where it broadcasts).
template <int N>
dev::OffsetCalculator<N> make_offset_calculator(const char* op, const Shape& shape,
                                                const std::array<const Shape*, N>& strides) {
  dev::OffsetCalculator<N> calc;
  int64_t numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    const int64_t size = shape[d];
    numel *= size;
    if (size == 1) continue;
    if (calc.ndim > 0) {
      const int last = calc.ndim - 1;
      bool mergeable = true;
      for (int k = 0; k < N; ++k) mergeable &= (*strides[k])[d] == calc.strides[last][k] * calc.sizes[last];
      if (mergeable) {
        calc.sizes[last] *= size;
        continue;
      }
    }
    ANVIL_CHECK(calc.ndim < dev::kMaxDims, op, ": more than ", dev::kMaxDims,
                " dims that cannot be merged are not supported on CUDA (shape ", shape, ")");
    calc.sizes[calc.ndim] = size;
    for (int k = 0; k < N; ++k) calc.strides[calc.ndim][k] = (*strides[k])[d];
    ++calc.ndim;
  }
  calc.index32 = numel <= static_cast<int64_t>(UINT32_MAX);
  return calc;
}

// Views of one shape (views[0]'s).
template <int N>
dev::OffsetCalculator<N> make_offset_calculator(const char* op, const std::array<const View*, N>& views) {
  std::array<const Shape*, N> strides;
  for (int k = 0; k < N; ++k) strides[k] = &views[k]->strides;
  return make_offset_calculator<N>(op, views[0]->shape, strides);
}

}  // namespace anvil::cuda
