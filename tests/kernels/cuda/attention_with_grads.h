#pragma once
// scaled_dot_product_attention's output and its three input gradients for an
// upstream gradient g: what the CUDA attention tests and the cuDNN SDPA tests
// compare between paths and devices.
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"

namespace anvil::test {

struct AttentionResult {
  Tensor out, gq, gk, gv;
};

inline AttentionResult attention_with_grads(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                            const AttentionOptions& o) {
  std::vector<Tensor> in = {q.detach().requires_grad_(true), k.detach().requires_grad_(true),
                            v.detach().requires_grad_(true)};
  Tensor out = scaled_dot_product_attention(in[0], in[1], in[2], o);
  auto grads = autograd::grad({(out * g).sum()}, in);
  return {out.detach(), grads[0], grads[1], grads[2]};
}

}  // namespace anvil::test
