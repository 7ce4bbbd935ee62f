#include "distributed/tensor_parallel/cross_entropy.h"

#include <vector>

#include "core/autograd/function.h"
#include "core/base/error.h"
#include "core/ops.h"

namespace anvil::distributed::tensor_parallel {

Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const GroupPtr& group,
                                    const VocabParallelCrossEntropyOptions& options) {
  ANVIL_CHECK(group != nullptr, "vocab_parallel_cross_entropy: no tensor-parallel group");
  ANVIL_CHECK(logits.defined() && targets.defined() && logits.dim() == targets.dim() + 1 &&
                  Shape(logits.shape().begin(), logits.shape().end() - 1) == targets.shape(),
              "vocab_parallel_cross_entropy: expected logits [..., V/n] and targets [...] with the same leading "
              "shape, got logits ",
              logits.defined() ? logits.shape_str() : "undefined", " and targets ",
              targets.defined() ? targets.shape_str() : "undefined");
  ANVIL_CHECK(targets.dtype() == kInt64, "vocab_parallel_cross_entropy: expected int64 targets, got ",
              dtype_name(targets.dtype()));
  const int64_t per_rank = logits.size(-1), vocab = per_rank * group->size(), start = group->rank() * per_rank;
  Tensor flat_targets = targets.reshape({-1});
  if (flat_targets.numel() > 0) {
    const int64_t lo = flat_targets.min().item<int64_t>(), hi = flat_targets.max().item<int64_t>();
    ANVIL_CHECK(lo >= 0 && hi < vocab, "vocab_parallel_cross_entropy: targets must be in [0, ", vocab, ") (", per_rank,
                " logits on each of ", group->size(), " ranks), got targets in [", lo, ", ", hi, "]");
  }

  Tensor losses, softmax, target_one_hot;
  {
    NoGradGuard no_grad;
    Tensor x = logits.detach().reshape({-1, per_rank});
    // Every rank shifts by the same global max, so the exponentials add up.
    Tensor max = amax(x, {1}, /*keepdim=*/true).contiguous();
    group->all_reduce(max, ReduceOp::Max)->wait();
    Tensor shifted = x - max;

    const Tensor outside = logical_or(lt(flat_targets, start), ge(flat_targets, start + per_rank));
    const Tensor local_targets = flat_targets.sub(start).masked_fill(outside, 0);
    const Tensor owned = logical_not(outside).to(x.dtype());
    // The target's logit lives on one rank; the others contribute zero.
    Tensor target_logit = all_reduce_sum(shifted.gather(1, local_targets.unsqueeze(1)).squeeze(1) * owned, *group);

    Tensor exp = shifted.exp();
    Tensor sum_exp = all_reduce_sum(exp.sum(1), *group);
    losses = (sum_exp.log() - target_logit).view(targets.shape());
    softmax = exp / sum_exp.unsqueeze(1);
    target_one_hot = one_hot(local_targets, per_rank).to(x.dtype()) * owned.unsqueeze(1);
  }
  if (autograd::needs_grad({logits})) {
    const Shape logits_shape = logits.shape();
    autograd::record("vocab_parallel_cross_entropy", {logits}, losses,
                     [softmax, target_one_hot, logits_shape](const Tensor& g) {
                       Tensor grad = (softmax - target_one_hot) * g.reshape({-1, 1});
                       return std::vector<Tensor>{grad.view(logits_shape)};
                     });
  }
  switch (options.reduction) {
    case Reduction::None:
      return losses;
    case Reduction::Sum:
      return losses.sum();
    case Reduction::Mean:
      return losses.mean();
  }
  return losses;
}

}  // namespace anvil::distributed::tensor_parallel
