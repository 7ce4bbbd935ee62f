#include "kernels/shapes/layouts.h"

#include "core/base/error.h"

namespace anvil::shapes {

ChannelLayout channel_layout(const char* op, const Shape& shape) {
  ANVIL_CHECK(shape.size() >= 2, op, ": expected input [N, C, *], got ", shape);
  ChannelLayout l{shape[0], shape[1], 1};
  for (size_t d = 2; d < shape.size(); ++d) l.s *= shape[d];
  return l;
}

void check_per_channel(const char* op, const char* what, const View* v, int64_t c) {
  ANVIL_CHECK(!v || v->numel() == c, op, ": ", what, " must have ", c, " elements (one per channel), got shape ",
              v ? v->shape : Shape{});
}

ChannelLayout check_batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in,
                               const View* weight, const View* bias, const View* running_mean, const View* running_var,
                               bool training) {
  const char* op = "batch_norm";
  const ChannelLayout l = channel_layout(op, in.shape);
  ANVIL_CHECK(out.shape == in.shape, "batch_norm: output shape ", out.shape, " differs from input shape ", in.shape);
  ANVIL_CHECK(out.dtype == in.dtype, "batch_norm: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  if (training) {
    ANVIL_CHECK(l.count() > 1, "batch_norm: training needs more than 1 value per channel, got input shape ", in.shape);
  } else {
    ANVIL_CHECK(running_mean && running_var,
                "batch_norm: evaluation mode needs running_mean and running_var (use training mode without them)");
  }
  check_per_channel(op, "save_mean", &save_mean, l.c);
  check_per_channel(op, "save_invstd", &save_invstd, l.c);
  check_per_channel(op, "weight", weight, l.c);
  check_per_channel(op, "bias", bias, l.c);
  check_per_channel(op, "running_mean", running_mean, l.c);
  check_per_channel(op, "running_var", running_var, l.c);
  return l;
}

ChannelLayout check_batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias,
                                        const View& grad_out, const View& in, const View* weight, const View& save_mean,
                                        const View& save_invstd) {
  const char* op = "batch_norm_backward";
  const ChannelLayout l = channel_layout(op, in.shape);
  ANVIL_CHECK(grad_out.shape == in.shape && (!grad_in.data || grad_in.shape == in.shape),
              "batch_norm_backward: grad_out ", grad_out.shape, " and grad_in ", grad_in.shape,
              " must have the input's shape ", in.shape);
  check_per_channel(op, "save_mean", &save_mean, l.c);
  check_per_channel(op, "save_invstd", &save_invstd, l.c);
  check_per_channel(op, "weight", weight, l.c);
  check_per_channel(op, "grad_weight", grad_weight, l.c);
  check_per_channel(op, "grad_bias", grad_bias, l.c);
  return l;
}

RowLayout row_layout(const char* op, const Shape& shape) {
  ANVIL_CHECK(!shape.empty(), op, ": expected input [rows, cols], got a scalar");
  RowLayout l{1, shape.back()};
  for (size_t d = 0; d + 1 < shape.size(); ++d) l.rows *= shape[d];
  return l;
}

RowLayout check_layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                           const View* bias) {
  ANVIL_CHECK(out.shape == in.shape, "layer_norm: output shape ", out.shape, " differs from input shape ", in.shape);
  const RowLayout l = row_layout("layer_norm", in.shape);
  ANVIL_CHECK(mean.numel() == l.rows && rstd.numel() == l.rows, "layer_norm: mean and rstd must have ", l.rows,
              " elements (one per row of input ", in.shape, "), got ", mean.shape, " and ", rstd.shape);
  ANVIL_CHECK((!weight || weight->numel() == l.cols) && (!bias || bias->numel() == l.cols),
              "layer_norm: weight and bias must have ", l.cols, " elements, got ", weight ? weight->shape : Shape{},
              " and ", bias ? bias->shape : Shape{});
  return l;
}

RowLayout check_rms_norm(const View& out, const View& rstd, const View& in, const View* weight) {
  ANVIL_CHECK(out.shape == in.shape && out.dtype == in.dtype, "rms_norm: output ", out.shape, " ",
              dtype_name(out.dtype), " differs from input ", in.shape, " ", dtype_name(in.dtype));
  const RowLayout l = row_layout("rms_norm", in.shape);
  ANVIL_CHECK(rstd.numel() == l.rows && rstd.dtype == kFloat32, "rms_norm: rstd must be float32 with ", l.rows,
              " elements (one per row of input ", in.shape, "), got ", rstd.shape, " ", dtype_name(rstd.dtype));
  ANVIL_CHECK(!weight || weight->numel() == l.cols, "rms_norm: weight must have ", l.cols, " elements, got ",
              weight ? weight->shape : Shape{});
  return l;
}

RowLayout check_rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                                  const View* weight) {
  const RowLayout l = row_layout("rms_norm_backward", in.shape);
  ANVIL_CHECK(grad_out.shape == in.shape && (!grad_in.data || grad_in.shape == in.shape),
              "rms_norm_backward: grad_out ", grad_out.shape, " and grad_in ", grad_in.shape,
              " must have the input's shape ", in.shape);
  ANVIL_CHECK(grad_out.dtype == in.dtype && (!grad_in.data || grad_in.dtype == in.dtype),
              "rms_norm_backward: grad_out ", dtype_name(grad_out.dtype), " and grad_in ", dtype_name(grad_in.dtype),
              " must have the input's dtype ", dtype_name(in.dtype));
  ANVIL_CHECK((!weight || weight->numel() == l.cols) && (!grad_weight || grad_weight->numel() == l.cols),
              "rms_norm_backward: weight and grad_weight must have ", l.cols, " elements (the input's last dim ",
              in.shape, "), got ", weight ? weight->shape : Shape{}, " and ",
              grad_weight ? grad_weight->shape : Shape{});
  return l;
}

RowLayout check_layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias,
                                    const View& grad_out, const View& in, const View& mean, const View& rstd,
                                    const View* weight) {
  const RowLayout l = row_layout("layer_norm_backward", in.shape);
  ANVIL_CHECK(grad_out.shape == in.shape && (!grad_in.data || grad_in.shape == in.shape),
              "layer_norm_backward: grad_out ", grad_out.shape, " and grad_in ", grad_in.shape,
              " must have the input's shape ", in.shape);
  ANVIL_CHECK(mean.numel() == l.rows && rstd.numel() == l.rows, "layer_norm_backward: mean and rstd must have ", l.rows,
              " elements, got ", mean.shape, " and ", rstd.shape);
  ANVIL_CHECK((!weight || weight->numel() == l.cols) && (!grad_weight || grad_weight->numel() == l.cols) &&
                  (!grad_bias || grad_bias->numel() == l.cols),
              "layer_norm_backward: weight, grad_weight and grad_bias must have ", l.cols, " elements");
  return l;
}

LossShape loss_shape(const char* op, const View& logits, const View& targets) {
  ANVIL_CHECK(logits.dim() == 2, op, ": expected logits [N, C], got ", logits.shape);
  const LossShape s{logits.shape[0], logits.shape[1]};
  ANVIL_CHECK(targets.numel() == s.n && targets.dim() <= 1, op, ": expected targets [", s.n, "] for logits ",
              logits.shape, ", got ", targets.shape);
  ANVIL_CHECK(targets.dtype == kInt64 || targets.dtype == kInt32, op, ": targets must be int64 class indices, got ",
              dtype_name(targets.dtype));
  return s;
}

void check_rows(const char* op, const char* what, const View& v, int64_t n) {
  ANVIL_CHECK(v.numel() == n && v.dim() <= 1, op, ": ", what, " must have shape [", n, "], got ", v.shape);
}

LossShape check_cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets) {
  const LossShape s = loss_shape("cross_entropy", logits, targets);
  check_rows("cross_entropy", "losses", losses, s.n);
  check_rows("cross_entropy", "logsumexp", logsumexp, s.n);
  return s;
}

LossShape check_cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits,
                                       const View& targets, const View& logsumexp) {
  const LossShape s = loss_shape("cross_entropy_backward", logits, targets);
  ANVIL_CHECK(grad_logits.shape == logits.shape, "cross_entropy_backward: grad_logits ", grad_logits.shape,
              " must have the logits' shape ", logits.shape);
  check_rows("cross_entropy_backward", "grad_losses", grad_losses, s.n);
  check_rows("cross_entropy_backward", "logsumexp", logsumexp, s.n);
  return s;
}

}  // namespace anvil::shapes
