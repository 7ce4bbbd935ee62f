#include "nn/optim/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil::nn::optim {
namespace {

std::vector<Tensor> defined_grads(const std::vector<Tensor>& parameters, const char* op) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < parameters.size(); ++i) {
    ANVIL_CHECK(parameters[i].defined(), op, ": parameter ", i, " is an undefined tensor");
    if (Tensor g = parameters[i].grad(); g.defined()) grads.push_back(g);
  }
  return grads;
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  const char* op = "clip_grad_norm_";
  ANVIL_CHECK(max_norm >= 0, op, ": max_norm must be >= 0, got ", max_norm);
  ANVIL_CHECK(norm_type > 0, op, ": norm_type must be > 0 (or INFINITY), got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads = defined_grads(parameters, op);
  if (grads.empty()) return 0.0;
  // One reduction per gradient, combined per device on the device, then on
  // the host: ||all|| = || (||g_1||, ..., ||g_n||) || for every p-norm.
  std::vector<std::pair<Device, std::vector<Tensor>>> per_device;
  for (const Tensor& g : grads) {
    Tensor n = norm(g, norm_type).to(kFloat64).reshape({1});
    auto it = std::find_if(per_device.begin(), per_device.end(), [&](auto& e) { return e.first == g.device(); });
    if (it == per_device.end())
      per_device.push_back({g.device(), {n}});
    else
      it->second.push_back(n);
  }
  std::vector<double> device_norms;
  for (auto& [device, norms] : per_device) device_norms.push_back(norm(cat(norms), norm_type).item<double>());
  double total = 0.0;
  if (device_norms.size() == 1) {
    total = device_norms[0];
  } else if (std::isinf(norm_type)) {
    for (double n : device_norms) total = std::max(total, n);
    for (double n : device_norms)
      if (std::isnan(n)) total = n;
  } else {
    for (double n : device_norms) total += std::pow(n, norm_type);
    total = std::pow(total, 1.0 / norm_type);
  }
  if (!std::isfinite(total)) return total;
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0)
    for (Tensor& g : grads) g.mul_(coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  const char* op = "clip_grad_value_";
  ANVIL_CHECK(clip_value >= 0, op, ": clip_value must be >= 0, got ", clip_value);
  NoGradGuard no_grad;
  for (Tensor& g : defined_grads(parameters, op)) g.clamp_(-clip_value, clip_value);
}

}  // namespace anvil::nn::optim
