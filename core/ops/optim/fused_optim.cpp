// The fused optimizer updates: tensors to views, then the device's kernel
// (kernels/*/optim*), which checks the lists (kernels/shapes/optim_checks.h).
#include "core/ops/optim/fused_optim.h"

#include "core/dispatch.h"

namespace anvil {
namespace {

std::vector<View> views_of(const std::vector<Tensor>& ts) {
  std::vector<View> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.view_of());
  return out;
}

}  // namespace

void fused_adamw_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& exp_avg, const std::vector<Tensor>& exp_avg_sq, const AdamWParams& p) {
  if (params.empty()) return;
  detail::kernel_of<kernel::AdamW>(params[0])(views_of(params), views_of(grads), views_of(exp_avg),
                                              views_of(exp_avg_sq), p);
}

void fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& momentum, const SGDParams& p) {
  if (params.empty()) return;
  detail::kernel_of<kernel::SGD>(params[0])(views_of(params), views_of(grads), views_of(momentum), p);
}

}  // namespace anvil
