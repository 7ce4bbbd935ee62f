#pragma once
// Finite-difference gradient checks in float64, shared by the op tests.
//
//   EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return (in[0] * in[1]).sum(); },
//                         {randn({3, 4}, kFloat64), randn({4}, kFloat64)}));
//
// The function must return a tensor; its gradient is checked against central
// differences for every input element (inputs are made leaves requiring grad).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops.h"

namespace anvil::testing {

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-4;
};

// Reduces any output to a scalar with fixed random weights, so every output
// element's gradient is exercised.
inline Tensor weighted_sum(const Tensor& out, const Tensor& weights) { return (out * weights).sum(); }

inline ::testing::AssertionResult gradcheck(const TensorFn& fn, std::vector<Tensor> inputs,
                                            const GradcheckOptions& o = {}) {
  for (auto& t : inputs) t = t.detach().contiguous().clone().requires_grad_(true);
  Tensor probe;
  {
    NoGradGuard ng;
    probe = fn(inputs);
  }
  Tensor weights = randn(probe.shape(), TensorOptions().dtype(kFloat64).device(probe.device()));
  auto scalar_out = [&](const std::vector<Tensor>& in) { return weighted_sum(fn(in), weights); };

  Tensor loss = scalar_out(inputs);
  std::vector<Tensor> analytic = autograd::grad({loss}, inputs, {}, {}, /*allow_unused=*/true);

  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor x = inputs[i];
    int64_t n = x.numel();
    std::vector<double> numeric(static_cast<size_t>(n));
    {
      NoGradGuard ng;
      Tensor flat = x.detach().view({-1});
      for (int64_t k = 0; k < n; ++k) {
        double orig = flat[k].item<double>();
        flat[k].fill_(orig + o.eps);
        double plus = scalar_out(inputs).item<double>();
        flat[k].fill_(orig - o.eps);
        double minus = scalar_out(inputs).item<double>();
        flat[k].fill_(orig);
        numeric[k] = (plus - minus) / (2 * o.eps);
      }
    }
    std::vector<double> got = analytic[i].defined() ? analytic[i].to_vector<double>() : std::vector<double>(n, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      double diff = std::abs(got[k] - numeric[k]);
      if (diff > o.atol + o.rtol * std::abs(numeric[k])) {
        std::ostringstream os;
        os << "input " << i << " (shape " << x.shape_str() << ") element " << k << ": analytic " << got[k]
           << " vs numeric " << numeric[k];
        return ::testing::AssertionFailure() << os.str();
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Max |a - b| over all elements (both moved to CPU float64).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return va.size() == vb.size() ? m : INFINITY;
}

}  // namespace anvil::testing
