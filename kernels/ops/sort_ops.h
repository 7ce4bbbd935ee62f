#pragma once
// The order sort, argsort and topk put elements in, written once as ANVIL_HD
// code for the CPU backend (kernels/cpu/sort.cpp), the CUDA kernels
// (kernels/cuda/sort.cu) and the emulated GPU: PyTorch's order, NaN above
// every number (last ascending, first descending), and equal values in their
// original order. Comparing (value, index) pairs makes every sort stable,
// including the CUDA kernel's bitonic network, which on its own is not.
#include <cstdint>

#include "core/base/host_device.h"
#include "kernels/ops/math.h"

namespace anvil {

struct SortParams {
  bool descending = false;
  bool stable = false;  // every sort here is stable; kept for PyTorch's signature
};

namespace ops {

// Whether element (a, ia) comes before (b, ib). A is the compute type.
template <class A> ANVIL_HD bool sorts_before(A a, int64_t ia, A b, int64_t ib, bool descending) {
  const bool an = math::isnan(a), bn = math::isnan(b);
  if (an != bn) return descending ? an : bn;  // NaN is the largest value
  if (!an && a != b) return descending ? b < a : a < b;
  return ia < ib;  // equal (or both NaN): original order
}

}  // namespace ops
}  // namespace anvil
