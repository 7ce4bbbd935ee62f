#pragma once
// Helpers for the optimizer tests: parameters and gradients as host vectors,
// so the reference updates can be written with plain doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ops.h"

namespace anvil::nn::optim::test {

using Vec = std::vector<double>;

// A float64 leaf that requires grad, with standard-normal values.
inline Tensor random_param(const Shape& shape, DType dtype = kFloat64) {
  Tensor p = randn(shape, TensorOptions().dtype(dtype));
  p.requires_grad_(true);
  return p;
}

inline Vec values(const Tensor& t) { return t.detach().to_vector<double>(); }

// Sets a fresh random gradient on `p` and returns its values.
inline Vec set_random_grad(const Tensor& p) {
  Tensor g = randn(p.shape(), TensorOptions().dtype(p.dtype()));
  p.set_grad(g);
  return values(g);
}

inline void expect_near(const Vec& actual, const Vec& expected, double tol, const char* what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) continue;  // also equal infinities
    EXPECT_NEAR(actual[i], expected[i], tol * (1.0 + std::abs(expected[i]))) << what << " element " << i;
  }
}

inline void expect_equal(const Tensor& a, const Tensor& b) {
  const Vec va = values(a), vb = values(b);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i], vb[i]) << "element " << i;
}

// A fresh leaf with the same values (another model's copy of the parameter).
inline Tensor copy_param(const Tensor& p) {
  Tensor c = p.detach().clone();
  c.requires_grad_(true);
  return c;
}

}  // namespace anvil::nn::optim::test
