// kl_div, smooth_l1 and huber losses, cosine similarity, pairwise distance
// and one_hot, composed from elementwise ops and reductions (which have CPU
// and CUDA kernels and their own gradients).
#include <cmath>

#include "core/autocast.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn_functional.h"
#include "core/ops/reduce.h"

namespace anvil {

namespace {

void check_loss_args(const char* op, const Tensor& input, const Tensor& target) {
  ANVIL_CHECK(input.defined() && target.defined() && input.shape() == target.shape(), op,
              ": expected input and target of the same shape, got ",
              input.defined() ? detail::describe(input) : std::string("undefined"), " and ",
              target.defined() ? detail::describe(target) : std::string("undefined"));
  detail::check_floating(op, input, "input");
  detail::check_floating(op, target, "target");
  detail::check_same_device(op, {input, target});
}

Tensor reduce_loss(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return loss.sum();
    case Reduction::Mean:
      return loss.mean();
  }
  return loss;
}

}  // namespace

Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction, bool log_target) {
  if (auto cast = autocast::full_precision_inputs(input, target))
    return kl_div(cast[0], cast[1], reduction, log_target);
  check_loss_args("kl_div", input, target);
  Tensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {
    // xlogy: 0 where target is 0 (and its gradient finite there); a negative
    // target gives NaN, as PyTorch's.
    Tensor safe = where(eq(target, 0.0), ones_like(target), target);
    loss = target * log(safe) - target * input;
  }
  switch (reduction) {
    case KLDivReduction::None:
      return loss;
    case KLDivReduction::Sum:
      return loss.sum();
    case KLDivReduction::Mean:
      return loss.mean();
    case KLDivReduction::BatchMean:
      return input.dim() == 0 ? loss.sum() : loss.sum() / static_cast<double>(input.size(0));
  }
  return loss;
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  if (auto cast = autocast::full_precision_inputs(input, target))
    return smooth_l1_loss(cast[0], cast[1], reduction, beta);
  check_loss_args("smooth_l1_loss", input, target);
  ANVIL_CHECK(beta >= 0, "smooth_l1_loss: expected beta >= 0, got ", beta);
  Tensor z = abs(input - target);
  if (beta == 0) return reduce_loss(z, reduction);
  return reduce_loss(where(lt(z, beta), z * z * (0.5 / beta), z - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  if (auto cast = autocast::full_precision_inputs(input, target)) return huber_loss(cast[0], cast[1], reduction, delta);
  check_loss_args("huber_loss", input, target);
  ANVIL_CHECK(delta > 0, "huber_loss: expected delta > 0, got ", delta);
  Tensor z = abs(input - target);
  return reduce_loss(where(lt(z, delta), z * z * 0.5, (z - 0.5 * delta) * delta), reduction);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  if (auto cast = autocast::full_precision_inputs(x1, x2)) return cosine_similarity(cast[0], cast[1], dim, eps);
  ANVIL_CHECK(x1.defined() && x2.defined(), "cosine_similarity: expected two defined tensors");
  detail::check_floating("cosine_similarity", x1, "x1");
  detail::check_floating("cosine_similarity", x2, "x2");
  detail::check_same_device("cosine_similarity", {x1, x2});
  // Broadcast first, as PyTorch, so dim counts in the common shape.
  const Shape common = broadcast_shapes(x1.shape(), x2.shape(), "cosine_similarity");
  Tensor a = x1.expand(common), b = x2.expand(common);
  const int64_t nd = std::max<int64_t>(a.dim(), 1);
  ANVIL_CHECK(dim >= -nd && dim < nd, "cosine_similarity: dim ", dim, " out of range for inputs ", detail::describe(x1),
              " and ", detail::describe(x2));
  // Each vector divided by its norm, the norm clamped to eps in value only
  // (PyTorch clamps under no_grad, so the gradient is the unclamped norm's).
  auto unit = [&](const Tensor& v) {
    Tensor n = norm(v, 2.0, {dim}, true);
    Tensor clamped = n + (clamp_min(n.detach(), eps) - n.detach());
    return v / clamped;
  };
  return sum(unit(a) * unit(b), {dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  if (auto cast = autocast::full_precision_inputs(x1, x2)) return pairwise_distance(cast[0], cast[1], p, eps, keepdim);
  ANVIL_CHECK(x1.defined() && x2.defined(), "pairwise_distance: expected two defined tensors");
  detail::check_floating("pairwise_distance", x1, "x1");
  detail::check_floating("pairwise_distance", x2, "x2");
  detail::check_same_device("pairwise_distance", {x1, x2});
  ANVIL_CHECK(p >= 0, "pairwise_distance: expected p >= 0, got ", p);
  Tensor diff = x1 - x2 + eps;
  if (diff.dim() == 0) return abs(diff);  // PyTorch: a 0-d difference is its own norm
  return norm(diff, p, {-1}, keepdim);
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  ANVIL_CHECK(x.defined() && x.dtype() == kInt64, "one_hot: expected an int64 tensor of class indices, got ",
              x.defined() ? detail::describe(x) : std::string("an undefined tensor"));
  ANVIL_CHECK(num_classes >= -1, "one_hot: expected num_classes >= 0 (or -1 to infer it), got ", num_classes);
  NoGradGuard no_grad;
  if (x.numel() > 0) {
    const int64_t lo = amin(x).item<int64_t>(), hi = amax(x).item<int64_t>();
    ANVIL_CHECK(lo >= 0, "one_hot: class indices must be non-negative, got ", lo);
    if (num_classes == -1) num_classes = hi + 1;
    ANVIL_CHECK(hi < num_classes, "one_hot: class index ", hi, " is out of range for num_classes=", num_classes);
  } else {
    ANVIL_CHECK(num_classes != -1, "one_hot: cannot infer num_classes from an empty tensor; pass it");
  }
  Tensor classes = arange(static_cast<double>(num_classes), TensorOptions().dtype(kInt64).device(x.device()));
  return eq(x.unsqueeze(-1), classes).to(kInt64);
}

}  // namespace anvil
