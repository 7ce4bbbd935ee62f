// Optimizer updates over lists of contiguous float32/float64 tensors, with
// PyTorch's formulas (torch.optim.AdamW/Adam/SGD, single-tensor path). Each
// tensor is one flat loop the compiler vectorises; big ones are split over
// OpenMP threads.
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/optim_kernels.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/shapes/optim_checks.h"

namespace anvil::cpu {
namespace {

// Each update is a loop over [begin, end) in a function of its own whose
// array arguments are __restrict (the shape checks guarantee distinct
// tensors) and whose options are template arguments or plain values: only
// then does the compiler see that no store changes what the next iteration
// reads, and vectorise the loop.
template <typename T> struct AdamWConstants {
  T b1, b2, one_minus_b1, one_minus_b2, step_size, inv_bias2_sqrt, eps, decay, wd;
};

template <typename T, bool Decoupled>
void adamw_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t begin, int64_t end,
                 const AdamWConstants<T> c) {
  for (int64_t i = begin; i < end; ++i) {
    T pi = p[i], gi = g[i];
    if constexpr (Decoupled)
      pi *= c.decay;  // AdamW: p -= lr * wd * p
    else
      gi += c.wd * pi;  // Adam: g += wd * p
    const T mi = c.b1 * m[i] + c.one_minus_b1 * gi;
    const T vi = c.b2 * v[i] + c.one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    // mhat / (sqrt(vhat) + eps), written as PyTorch does it
    p[i] = pi - c.step_size * mi / (std::sqrt(vi) * c.inv_bias2_sqrt + c.eps);
  }
}

template <typename T> void adamw_tensor(T* p, const T* g, T* m, T* v, int64_t n, const AdamWParams& hp) {
  const double bias1 = 1.0 - std::pow(hp.beta1, static_cast<double>(hp.step));
  const double bias2 = 1.0 - std::pow(hp.beta2, static_cast<double>(hp.step));
  const AdamWConstants<T> c{T(hp.beta1),       T(hp.beta2),
                            T(1.0 - hp.beta1), T(1.0 - hp.beta2),
                            T(hp.lr / bias1),  T(1.0 / std::sqrt(bias2)),
                            T(hp.eps),         T(1.0 - hp.lr * hp.weight_decay),
                            T(hp.weight_decay)};
  const bool decoupled = hp.decoupled;
  parallel_for(n, n * 4, [=](int64_t begin, int64_t end) {
    if (decoupled)
      adamw_range<T, true>(p, g, m, v, begin, end, c);
    else
      adamw_range<T, false>(p, g, m, v, begin, end, c);
  });
}

// SGD without momentum, and with momentum (classic or Nesterov; on the first
// step the buffer starts as the gradient itself, as in PyTorch).
template <typename T>
void sgd_plain_range(T* __restrict p, const T* __restrict g, int64_t begin, int64_t end, const T lr, const T wd) {
  for (int64_t i = begin; i < end; ++i) p[i] -= lr * (g[i] + wd * p[i]);
}

template <typename T, bool Nesterov>
void sgd_momentum_range(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t begin, int64_t end,
                        const T lr, const T wd, const T mom, const T keep, const bool first) {
  for (int64_t i = begin; i < end; ++i) {
    const T d = g[i] + wd * p[i];
    const T b = first ? d : mom * buf[i] + keep * d;
    buf[i] = b;
    p[i] -= lr * (Nesterov ? d + mom * b : b);
  }
}

template <typename T> void sgd_tensor(T* p, const T* g, T* buf, int64_t n, const SGDParams& hp) {
  const T lr = T(hp.lr), wd = T(hp.weight_decay), mom = T(hp.momentum), keep = T(1.0 - hp.dampening);
  const bool use_momentum = hp.momentum != 0.0, first = hp.first_step, nesterov = hp.nesterov;
  parallel_for(n, n * 2, [=](int64_t begin, int64_t end) {
    if (!use_momentum)
      sgd_plain_range(p, g, begin, end, lr, wd);
    else if (nesterov)
      sgd_momentum_range<T, true>(p, g, buf, begin, end, lr, wd, mom, keep, first);
    else
      sgd_momentum_range<T, false>(p, g, buf, begin, end, lr, wd, mom, keep, first);
  });
}

}  // namespace

void adamw(std::span<const View> params, std::span<const View> grads, std::span<const View> exp_avg,
           std::span<const View> exp_avg_sq, const AdamWParams& p) {
  const char* name = p.decoupled ? "adamw" : "adam";
  shapes::check_optimizer_lists(name, params, {grads, exp_avg, exp_avg_sq});
  ANVIL_CHECK(p.step >= 1, name, ": step must be at least 1 (1-based, after increment), got ", p.step);
  for (size_t k = 0; k < params.size(); ++k) {
    shapes::check_optimizer_tensor(name, params[k], grads[k], "gradient");
    shapes::check_optimizer_tensor(name, params[k], exp_avg[k], "exp_avg");
    shapes::check_optimizer_tensor(name, params[k], exp_avg_sq[k], "exp_avg_sq");
  }
  for (size_t k = 0; k < params.size(); ++k) {
    const int64_t n = params[k].numel();
    if (params[k].dtype == kFloat32)
      adamw_tensor(params[k].ptr<float>(), grads[k].ptr<float>(), exp_avg[k].ptr<float>(), exp_avg_sq[k].ptr<float>(),
                   n, p);
    else
      adamw_tensor(params[k].ptr<double>(), grads[k].ptr<double>(), exp_avg[k].ptr<double>(),
                   exp_avg_sq[k].ptr<double>(), n, p);
  }
}

void sgd(std::span<const View> params, std::span<const View> grads, std::span<const View> momentum,
         const SGDParams& p) {
  const bool use_momentum = p.momentum != 0.0;
  shapes::check_optimizer_lists("sgd", params, {grads});
  if (use_momentum) shapes::check_optimizer_lists("sgd", params, {momentum});
  for (size_t k = 0; k < params.size(); ++k) {
    shapes::check_optimizer_tensor("sgd", params[k], grads[k], "gradient");
    if (use_momentum) shapes::check_optimizer_tensor("sgd", params[k], momentum[k], "momentum buffer");
  }
  for (size_t k = 0; k < params.size(); ++k) {
    const int64_t n = params[k].numel();
    if (params[k].dtype == kFloat32)
      sgd_tensor(params[k].ptr<float>(), grads[k].ptr<float>(), use_momentum ? momentum[k].ptr<float>() : nullptr, n,
                 p);
    else
      sgd_tensor(params[k].ptr<double>(), grads[k].ptr<double>(), use_momentum ? momentum[k].ptr<double>() : nullptr, n,
                 p);
  }
}

ANVIL_REGISTER_KERNEL(kernel::AdamW, CPU, adamw);
ANVIL_REGISTER_KERNEL(kernel::SGD, CPU, sgd);

}  // namespace anvil::cpu
