#pragma once
// What the tensor-parallel tests share: comparing a rank's slice with the
// matching slice of a single-process result.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/ops.h"
#include "core/tensor.h"

namespace anvil::distributed::tensor_parallel::testing {

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return 1e300;
  return (a.detach().to(kFloat64) - b.detach().to(kFloat64)).abs().max().item<double>();
}

// Slice `rank` of `parts` equal slices of `full` along `dim`.
inline Tensor slice_of(const Tensor& full, int64_t dim, int rank, int parts) {
  const int64_t n = full.size(dim) / parts;
  return full.detach().narrow(dim, rank * n, n);
}

// A leaf copy for one rank (each rank differentiates its own).
inline Tensor leaf_copy(const Tensor& t) { return t.detach().clone().requires_grad_(); }

}  // namespace anvil::distributed::tensor_parallel::testing
