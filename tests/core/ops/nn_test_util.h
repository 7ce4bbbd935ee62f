#pragma once
// Helpers shared by the nn op tests (tests/core/ops/test_nn_*.cpp).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "tests/core/gradcheck.h"

namespace anvil::testing {

// Runs f and expects an anvil::Error whose message contains every needle.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "message: " << msg << "\nmissing: " << n;
    return;
  }
  ADD_FAILURE() << "expected an anvil::Error mentioning " << ::testing::PrintToString(needles);
}

inline std::string str(const Shape& s) { return ::testing::PrintToString(s); }

inline Tensor randn64(const Shape& s) { return randn(s, kFloat64); }

// Values in [lo, hi) as float64 (positive variances and the like).
inline Tensor uniform64(const Shape& s, double lo, double hi) { return rand(s, kFloat64) * (hi - lo) + lo; }

inline void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol,
                            const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// The first-order gradient of sum(weights * f(inputs)) w.r.t. inputs[which],
// built with create_graph so it can itself be differentiated: checking it
// with gradcheck tests the double backward.
inline Tensor first_grad(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& in,
                         size_t which, const Tensor& weights) {
  EnableGradGuard grad_on;
  Tensor y = f(in);
  autograd::BackwardOptions o;
  o.create_graph = true;
  return autograd::grad({(y * weights).sum()}, {in[which]}, {}, o)[0];
}

}  // namespace anvil::testing
