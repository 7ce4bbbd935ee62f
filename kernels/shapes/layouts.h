#pragma once
// How batch norm, layer norm and cross entropy see their operands, and the
// argument checks every backend runs before computing them (same checks,
// same messages on CPU and CUDA). Plain C++, no CUDA headers.
#include <cstdint>
#include "kernels/view.h"

namespace anvil::shapes {

// in [N, C, *] as N x C x S (S = product of the spatial dims).
struct ChannelLayout {
  int64_t n, c, s;
  int64_t count() const { return n * s; }  // values per channel
};

ChannelLayout channel_layout(const char* op, const Shape& shape);
// A per-channel operand (may be null: absent) must have c elements.
void check_per_channel(const char* op, const char* what, const View* v, int64_t c);

// Shapes of batch_norm's operands and what the mode needs (training: more
// than one value per channel; evaluation: running statistics); returns the
// input's layout.
ChannelLayout check_batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in,
                               const View* weight, const View* bias, const View* running_mean, const View* running_var,
                               bool training);
ChannelLayout check_batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias,
                                        const View& grad_out, const View& in, const View* weight, const View& save_mean,
                                        const View& save_invstd);

// in [..., cols] as rows x cols (rows = product of the leading dims).
struct RowLayout {
  int64_t rows, cols;
};

RowLayout row_layout(const char* op, const Shape& shape);

// Shapes of layer_norm's operands; returns the input's layout.
RowLayout check_layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                           const View* bias);
// Shapes of rms_norm's operands; returns the input's layout.
RowLayout check_rms_norm(const View& out, const View& rstd, const View& in, const View* weight);
RowLayout check_rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                                  const View* weight);
RowLayout check_layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias,
                                    const View& grad_out, const View& in, const View& mean, const View& rstd,
                                    const View* weight);

// Cross entropy over logits [n, c].
struct LossShape {
  int64_t n, c;
};

// logits [N, C] and int targets [N].
LossShape loss_shape(const char* op, const View& logits, const View& targets);
// A per-row operand must have shape [n].
void check_rows(const char* op, const char* what, const View& v, int64_t n);

LossShape check_cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets);
LossShape check_cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits,
                                       const View& targets, const View& logsumexp);

}  // namespace anvil::shapes
