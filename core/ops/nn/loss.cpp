// Loss functions. cross_entropy runs the fused log-softmax + NLL kernel and
// its fused backward; the others are composed from elementwise, reduce and
// indexing ops (with a hand-written gradient for the logistic loss, whose
// composed form would have the wrong derivative at logit 0).
#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"

namespace anvil {

using autograd::GradMode;
using autograd::SavedTensor;
using nn_detail::Grads;

namespace nn_detail {

void check_class_targets(const char* op, const Tensor& targets, int64_t classes, int64_t ignore_index) {
  // On other devices this would cost a synchronisation per call; their
  // kernels guard the memory accesses instead.
  if (!targets.device().is_cpu() || targets.numel() == 0) return;
  Tensor t = targets.contiguous();
  const int64_t* v = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    ANVIL_CHECK(v[i] == ignore_index || (v[i] >= 0 && v[i] < classes), op, ": target ", v[i], " at position ", i,
                " is out of range for ", classes, " classes (expected 0 to ", classes - 1, ", or ignore_index ",
                ignore_index, ")");
}

}  // namespace nn_detail

namespace {

Tensor reduce_loss(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::Sum:
      return sum(losses);
    case Reduction::Mean:
      return mean(losses);
    case Reduction::None:
      break;
  }
  return losses;
}

// Mean over the rows whose target is not ignored, as PyTorch defines it (NaN
// when every target is ignored).
Tensor reduce_class_loss(const Tensor& losses, const Tensor& targets, const CrossEntropyOptions& o) {
  if (o.reduction != Reduction::Mean) return reduce_loss(losses, o.reduction);
  // Counted in float64: float16 cannot hold counts above 2048 exactly.
  Tensor counted = ne(targets, Scalar(o.ignore_index())).to(kFloat64).sum();
  return (sum(losses) / counted).to(losses.dtype());
}

using ClassLossFn = Tensor (*)(const Tensor&, const Tensor&, const CrossEntropyOptions&);

// Unbatched [C] inputs and spatial [N, C, d1, ...] inputs reduce to the
// [rows, C] case; returns an undefined tensor when `input` already is 2-D.
Tensor reshape_class_loss(const char* op, ClassLossFn fn, const Tensor& input, const Tensor& targets,
                          const CrossEntropyOptions& o) {
  if (input.dim() == 1) {
    ANVIL_CHECK(targets.dim() == 0 || (targets.dim() == 1 && targets.size(0) == 1), op, ": unbatched input ",
                detail::describe(input), " takes a 0-d target, got ", detail::describe(targets));
    Tensor r = fn(input.unsqueeze(0), targets.reshape({1}), o);
    return o.reduction == Reduction::None ? r.reshape({}) : r;
  }
  if (input.dim() > 2) {
    Shape expected = input.shape();
    expected.erase(expected.begin() + 1);
    ANVIL_CHECK(targets.shape() == expected, op, ": input ", detail::describe(input), " expects targets of shape ",
                expected, " (the input's shape without the class dim), got ", detail::describe(targets));
    Shape perm{0};
    for (int64_t d = 2; d < input.dim(); ++d) perm.push_back(d);
    perm.push_back(1);
    Tensor r = fn(input.permute(perm).reshape({-1, input.size(1)}), targets.reshape({-1}), o);
    return o.reduction == Reduction::None ? r.reshape(expected) : r;
  }
  return {};
}

void check_class_loss_args(const char* op, const Tensor& input, const Tensor& targets, const CrossEntropyOptions& o,
                           const char* input_name) {
  detail::check_floating(op, input, input_name);
  detail::check_dtype(op, targets, kInt64, "targets (class indices)");
  detail::check_same_device(op, {input, targets});
  ANVIL_CHECK(input.dim() >= 1, op, ": expected ", input_name, " [N, C], [C] or [N, C, d1, ...], got a 0-d tensor");
  ANVIL_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0, op, ": label_smoothing must be in [0, 1], got ",
              o.label_smoothing);
}

void check_rows(const char* op, const Tensor& input, const Tensor& targets) {
  ANVIL_CHECK(targets.dim() == 1 && targets.size(0) == input.size(0), op, ": input ", detail::describe(input),
              " expects targets of shape [", input.size(0), "], got ", detail::describe(targets));
  ANVIL_CHECK(input.size(1) > 0 || input.size(0) == 0, op, ": input ", detail::describe(input), " has no classes");
}

// d(loss_i)/d(logits_i) composed from ops, for create_graph:
// (softmax - smoothed one-hot) * grad_losses_i.
Tensor cross_entropy_composed_backward(const Tensor& grad_losses, const Tensor& logits, const Tensor& targets,
                                       double smoothing) {
  const int64_t classes = logits.size(1);
  Tensor classes_row = arange(static_cast<double>(classes), TensorOptions().dtype(kInt64).device(logits.device()));
  Tensor one_hot = eq(targets.unsqueeze(1), classes_row.unsqueeze(0)).to(logits.dtype());
  Tensor smoothed = one_hot * (1.0 - smoothing) + smoothing / static_cast<double>(classes);
  return (softmax(logits, 1) - smoothed) * grad_losses.unsqueeze(1);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& o) {
  if (auto cast = autocast::full_precision_inputs(logits)) return cross_entropy(cast[0], targets, o);
  check_class_loss_args("cross_entropy", logits, targets, o, "logits");
  if (Tensor r = reshape_class_loss("cross_entropy", cross_entropy, logits, targets, o); r.defined()) return r;
  check_rows("cross_entropy", logits, targets);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  nn_detail::check_class_targets("cross_entropy", targets, classes, o.ignore_index);

  const CrossEntropyParams p{o.ignore_index, o.label_smoothing};
  Tensor losses = empty({rows}, logits.options());
  Tensor logsumexp = empty({rows}, logits.options().dtype(kFloat32));
  if (rows > 0)
    detail::kernel_of<kernel::CrossEntropy>(logits)(losses.view_of(), logsumexp.view_of(), logits.view_of(),
                                                    targets.view_of(), p);
  if (autograd::needs_grad({logits})) {
    autograd::record("cross_entropy", {logits}, losses,
                     [sl = SavedTensor(logits, "cross_entropy"), st = SavedTensor(targets, "cross_entropy"), logsumexp,
                      p](const Tensor& g) {
                       Tensor x = sl.get(), t = st.get();
                       // Ignored rows get no gradient whatever the reduction sent them.
                       Tensor grad_losses = g * ne(t, Scalar(p.ignore_index)).to(g.dtype());
                       if (GradMode::is_enabled())
                         return Grads{cross_entropy_composed_backward(grad_losses, x, t, p.label_smoothing)};
                       Tensor grad = empty(x.shape(), x.options());
                       if (grad.numel() > 0)
                         detail::kernel_of<kernel::CrossEntropyBackward>(x)(
                             grad.view_of(), grad_losses.to(x.dtype()).view_of(), x.view_of(), t.view_of(),
                             logsumexp.view_of(), p);
                       return Grads{grad};
                     });
  }
  return reduce_class_loss(losses, targets, o);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, const CrossEntropyOptions& o) {
  if (auto cast = autocast::full_precision_inputs(log_probs)) return nll_loss(cast[0], targets, o);
  check_class_loss_args("nll_loss", log_probs, targets, o, "log_probs");
  if (Tensor r = reshape_class_loss("nll_loss", nll_loss, log_probs, targets, o); r.defined()) return r;
  check_rows("nll_loss", log_probs, targets);
  const int64_t classes = log_probs.size(1);
  nn_detail::check_class_targets("nll_loss", targets, classes, o.ignore_index);

  // Ignored rows gather class 0 (always valid) and are then zeroed.
  Tensor valid = ne(targets, Scalar(o.ignore_index()));
  Tensor safe_targets = masked_fill(targets, logical_not(valid), Scalar(int64_t{0}));
  Tensor valid_f = valid.to(log_probs.dtype());
  Tensor picked = gather(log_probs, 1, safe_targets.unsqueeze(1)).squeeze(1);
  Tensor losses = -(picked * valid_f);
  if (o.label_smoothing > 0.0) {
    // Same smoothing as cross_entropy, so nll_loss(log_softmax(x)) matches it.
    Tensor uniform = -(sum(log_probs, {1}) * valid_f);
    losses = losses * (1.0 - o.label_smoothing) + uniform * (o.label_smoothing / static_cast<double>(classes));
  }
  return reduce_class_loss(losses, targets, o);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (auto cast = autocast::full_precision_inputs(input, target)) return mse_loss(cast[0], cast[1], reduction);
  detail::check_floating("mse_loss", input, "input");
  detail::check_floating("mse_loss", target, "target");
  detail::check_same_device("mse_loss", {input, target});
  // PyTorch broadcasts here with a warning; a [N, 1] vs [N] mix-up would
  // silently become [N, N], so anvil asks for equal shapes.
  ANVIL_CHECK(input.shape() == target.shape(), "mse_loss: input ", detail::describe(input), " and target ",
              detail::describe(target), " must have the same shape");
  return reduce_loss(square(input - target), reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target, Reduction reduction) {
  if (auto cast = autocast::full_precision_inputs(logits, target))
    return binary_cross_entropy_with_logits(cast[0], cast[1], reduction);
  const char* op = "binary_cross_entropy_with_logits";
  detail::check_floating(op, logits, "logits");
  detail::check_floating(op, target, "target");
  detail::check_same_device(op, {logits, target});
  ANVIL_CHECK(logits.shape() == target.shape(), op, ": logits ", detail::describe(logits), " and target ",
              detail::describe(target), " must have the same shape");
  Tensor losses;
  {
    // max(x, 0) - x t + log(1 + exp(-|x|)): no overflow for any x.
    NoGradGuard no_grad;
    Tensor x = logits.detach(), t = target.detach();
    losses = relu(x) - x * t + log(1.0 + exp(-abs(x)));
  }
  if (autograd::needs_grad({logits, target})) {
    autograd::record(
        op, {logits, target}, losses,
        [sx = SavedTensor(logits, op), st = SavedTensor(target, op), xdt = logits.dtype(), tdt = target.dtype(),
         need_x = logits.requires_grad(), need_t = target.requires_grad()](const Tensor& g) {
          Tensor x = sx.get();
          Grads r(2);
          if (need_x) r[0] = (g * (sigmoid(x) - st.get())).to(xdt);
          if (need_t) r[1] = (-(g * x)).to(tdt);
          return r;
        });
  }
  return reduce_loss(losses, reduction);
}

}  // namespace anvil
