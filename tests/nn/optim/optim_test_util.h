#pragma once
// Helpers for the optimizer tests: parameters and gradients as host vectors,
// so the reference updates can be written with plain doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ops.h"
#include "nn/optim/optimizer.h"

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
  Tensor g = randn(p.shape(), TensorOptions().dtype(p.dtype())).to(p.device());
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

namespace anvil::nn::optim::test {

// Runs `steps` updates of Optim over two random parameters (on `device`)
// with fresh random gradients, and after each compares both parameters with
// a reference written in plain doubles: Ref has step(Vec& p, const Vec& g).
template <class Optim, class Options, class Ref>
void check_steps(const Options& options, const Ref& reference, int steps, double tol, DType dtype = kFloat64,
                 Device device = Device::cpu()) {
  manual_seed(17);
  Tensor w = randn({4, 3}, TensorOptions().dtype(dtype)).to(device).requires_grad_(true);
  Tensor b = randn({3}, TensorOptions().dtype(dtype)).to(device).requires_grad_(true);
  Optim opt({w, b}, options);
  Ref ref_w = reference, ref_b = reference;
  Vec pw = values(w), pb = values(b);
  for (int s = 0; s < steps; ++s) {
    const Vec gw = set_random_grad(w), gb = set_random_grad(b);
    opt.step();
    ref_w.step(pw, gw);
    ref_b.step(pb, gb);
    expect_near(values(w), pw, tol, "w");
    expect_near(values(b), pb, tol, "b");
  }
  const ParamState* st = opt.state_of(w);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->step, steps);
}

// After a few steps the state (through its flat, checkpoint form) goes into a
// fresh optimizer over copies of the parameters; both then take the same
// steps and must stay equal.
template <class Optim, class Options> void check_state_round_trip(const Options& options) {
  manual_seed(23);
  Tensor w = random_param({5, 2}), b = random_param({2});
  Optim opt({w, b}, options);
  for (int s = 0; s < 3; ++s) {
    set_random_grad(w), set_random_grad(b);
    opt.step();
  }
  Tensor w2 = copy_param(w), b2 = copy_param(b);
  Optim resumed({w2, b2}, options);
  resumed.load_state_dict(unflatten(flatten(opt.state_dict())));
  for (int s = 0; s < 3; ++s) {
    const Tensor gw = randn(w.shape(), kFloat64), gb = randn(b.shape(), kFloat64);
    w.set_grad(gw.clone()), b.set_grad(gb.clone()), w2.set_grad(gw.clone()), b2.set_grad(gb.clone());
    opt.step();
    resumed.step();
  }
  expect_equal(w, w2);
  expect_equal(b, b2);
}

}  // namespace anvil::nn::optim::test
