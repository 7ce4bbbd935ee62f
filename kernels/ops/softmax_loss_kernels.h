#pragma once
// Softmax and cross entropy: row-wise kernels over one dim.
#include <cstdint>

#include "kernels/view.h"

namespace anvil {

struct CrossEntropyParams {
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};

namespace kernel {

// out = softmax(in) along dim, or log_softmax when log.
struct Softmax {
  static constexpr const char* name = "softmax";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& in, int64_t dim, bool log);
};

// grad_in = softmax'(out) applied to grad_out (log selects log_softmax).
struct SoftmaxBackward {
  static constexpr const char* name = "softmax_backward";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_in, const View& grad_out, const View& out, int64_t dim, bool log);
};

// logits [N, C], targets int64 [N]; writes the per-row loss [N] (0 for ignored
// rows) and logsumexp [N] float32 for the backward pass.
struct CrossEntropy {
  static constexpr const char* name = "cross_entropy";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& losses, const View& logsumexp, const View& logits, const View& targets,
                         const CrossEntropyParams& p);
};

// grad_logits [N, C] from the per-row upstream gradient grad_losses [N].
struct CrossEntropyBackward {
  static constexpr const char* name = "cross_entropy_backward";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_logits, const View& grad_losses, const View& logits, const View& targets,
                         const View& logsumexp, const CrossEntropyParams& p);
};

}  // namespace kernel
}  // namespace anvil
