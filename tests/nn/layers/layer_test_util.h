#pragma once
// Helpers for the nn layer tests: finite-difference checks of a module's
// gradients (input and parameters), host-side references.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/ops.h"
#include "nn/module.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/nn_test_util.h"

namespace anvil::testing {

struct ModuleGradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-4;
};

// Checks d/d(every floating input, every parameter) of sum(w * f(inputs))
// against central differences, where f calls the module. The module and the
// inputs must be float64; the module must be deterministic (eval mode or no
// dropout).
inline ::testing::AssertionResult module_gradcheck(nn::Module& m,
                                                   const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                                   std::vector<Tensor> inputs, const ModuleGradcheckOptions& o = {}) {
  for (Tensor& t : inputs)
    if (t.defined()) {
      t = t.detach().clone();
      if (t.is_floating_point()) t.requires_grad_(true);
    }
  Tensor weights;
  {
    NoGradGuard ng;
    weights = randn(f(inputs).shape(), kFloat64);
  }
  auto loss = [&] { return (f(inputs) * weights).sum(); };
  m.zero_grad();
  loss().backward();
  std::vector<std::pair<std::string, Tensor>> targets = m.named_parameters();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) targets.emplace_back("input " + std::to_string(i), inputs[i]);
  for (auto& [name, t] : targets) {
    Tensor g = t.grad();
    std::vector<double> analytic = g.defined() ? g.to_vector<double>() : std::vector<double>(t.numel(), 0.0);
    NoGradGuard ng;
    Tensor flat = t.detach().view({-1});
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double orig = flat[k].item<double>();
      flat[k].fill_(orig + o.eps);
      const double plus = loss().item<double>();
      flat[k].fill_(orig - o.eps);
      const double minus = loss().item<double>();
      flat[k].fill_(orig);
      const double numeric = (plus - minus) / (2 * o.eps);
      if (std::abs(analytic[k] - numeric) > o.atol + o.rtol * std::abs(numeric)) {
        std::ostringstream os;
        os << name << " " << t.shape_str() << " element " << k << ": analytic " << analytic[k] << " vs numeric "
           << numeric;
        return ::testing::AssertionFailure() << os.str();
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// The same for a module of one input: d/d(x if floating, every parameter) of
// sum(w * module(x)).
inline ::testing::AssertionResult module_gradcheck(nn::Module& m, const Tensor& x_in,
                                                   const ModuleGradcheckOptions& o = {}) {
  const auto f = [&m](const std::vector<Tensor>& in) { return m.forward(in[0]); };
  return module_gradcheck(m, f, {x_in}, o);
}

// Sample mean and standard deviation of a tensor's values.
inline std::pair<double, double> mean_std(const Tensor& t) {
  auto v = t.to_vector<double>();
  double s = 0, sq = 0;
  for (double x : v) s += x;
  const double mean = s / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size() - 1))};
}

inline std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (auto& [n, _] : named) out.push_back(n);
  return out;
}

}  // namespace anvil::testing
