// Cross entropy over logits [N, C] with integer class targets, label
// smoothing and an ignored class. The forward pass saves each row's
// logsumexp so the backward pass gets softmax as exp(x - lse) in one sweep.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/softmax_loss_kernels.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kParallelLossElems = 1 << 14;

using shapes::LossShape;

// The targets as int64, each either ignore_index or a class in [0, C).
std::vector<int64_t> checked_targets(const char* op, const View& targets, const LossShape& s,
                                     const CrossEntropyParams& p) {
  std::vector<int64_t> t = dense_copy<int64_t>(targets);
  for (int64_t i = 0; i < s.n; ++i) {
    ANVIL_CHECK(t[i] == p.ignore_index || (t[i] >= 0 && t[i] < s.c), op, ": target ", t[i], " at row ", i,
                " is out of range for ", s.c, " classes (expected 0 <= target < ", s.c,
                " or ignore_index = ", p.ignore_index, ")");
  }
  return t;
}

template <typename T> double row_logsumexp(const T* x, int64_t c) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < c; ++j) mx = std::max<double>(mx, x[j]);
  if (std::isinf(mx)) return mx;  // all -inf (lse -inf) or some +inf (lse +inf)
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(x[j] - mx);
  return mx + std::log(sum);
}

template <typename T>
void cross_entropy_typed(const View& losses_view, const View& lse_view, const View& logits_view,
                         const std::vector<int64_t>& targets, const LossShape& s, const CrossEntropyParams& p) {
  const DenseIn<T> logits(logits_view);
  std::vector<double> losses(s.n), lse(s.n);
  const double ls = p.label_smoothing;
#pragma omp parallel for schedule(static) if (s.n * s.c > kParallelLossElems)
  for (int64_t i = 0; i < s.n; ++i) {
    const T* x = logits.get() + i * s.c;
    lse[i] = row_logsumexp(x, s.c);
    if (targets[i] == p.ignore_index) {
      losses[i] = 0;
      continue;
    }
    double target_term = (1 - ls) * static_cast<double>(x[targets[i]]);
    if (ls != 0) {
      double sum = 0;
      for (int64_t j = 0; j < s.c; ++j) sum += x[j];
      target_term += ls / static_cast<double>(s.c) * sum;
    }
    losses[i] = lse[i] - target_term;
  }
  scatter_dense(losses_view, losses.data());
  scatter_dense(lse_view, lse.data());
}

template <typename T>
void cross_entropy_backward_typed(const View& grad_logits_view, const View& grad_losses_view, const View& logits_view,
                                  const std::vector<int64_t>& targets, const View& lse_view, const LossShape& s,
                                  const CrossEntropyParams& p) {
  const DenseIn<T> logits(logits_view);
  const std::vector<double> grad_losses = dense_copy<double>(grad_losses_view);
  const std::vector<double> lse = dense_copy<double>(lse_view);
  DenseOut<T> grad(grad_logits_view);
  const double ls = p.label_smoothing, smooth = ls / static_cast<double>(std::max<int64_t>(s.c, 1));
#pragma omp parallel for schedule(static) if (s.n * s.c > kParallelLossElems)
  for (int64_t i = 0; i < s.n; ++i) {
    const T* x = logits.get() + i * s.c;
    T* dst = grad.get() + i * s.c;
    if (targets[i] == p.ignore_index) {
      std::fill(dst, dst + s.c, T(0));
      continue;
    }
    const double g = grad_losses[i];
    for (int64_t j = 0; j < s.c; ++j) dst[j] = static_cast<T>(g * (std::exp(x[j] - lse[i]) - smooth));
    dst[targets[i]] = static_cast<T>(dst[targets[i]] - g * (1 - ls));
  }
  grad.commit();
}

}  // namespace

void cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets,
                   const CrossEntropyParams& p) {
  const LossShape s = shapes::check_cross_entropy(losses, logsumexp, logits, targets);
  const std::vector<int64_t> t = checked_targets("cross_entropy", targets, s, p);
  dispatch_floating("cross_entropy", logits.dtype,
                    [&](auto tag) { cross_entropy_typed<decltype(tag)>(losses, logsumexp, logits, t, s, p); });
}

void cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits, const View& targets,
                            const View& logsumexp, const CrossEntropyParams& p) {
  const LossShape s = shapes::check_cross_entropy_backward(grad_logits, grad_losses, logits, targets, logsumexp);
  const std::vector<int64_t> t = checked_targets("cross_entropy_backward", targets, s, p);
  dispatch_floating("cross_entropy_backward", logits.dtype, [&](auto tag) {
    cross_entropy_backward_typed<decltype(tag)>(grad_logits, grad_losses, logits, t, logsumexp, s, p);
  });
}

ANVIL_REGISTER_KERNEL(kernel::CrossEntropy, CPU, cross_entropy);
ANVIL_REGISTER_KERNEL(kernel::CrossEntropyBackward, CPU, cross_entropy_backward);

}  // namespace anvil::cpu
