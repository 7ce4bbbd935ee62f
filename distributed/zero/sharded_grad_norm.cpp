#include "distributed/zero/sharded_grad_norm.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"

namespace anvil::distributed {

double clip_sharded_grad_norm_(ProcessGroup& group, const std::vector<Tensor>& shards, double max_norm,
                               const char* what) {
  ANVIL_CHECK(max_norm >= 0, what, ": max_norm must be >= 0, got ", max_norm);
  ANVIL_CHECK(!shards.empty(), what, ": got no gradient shards");
  NoGradGuard no_grad;
  double local = 0;
  for (const Tensor& s : shards)
    if (Tensor g = s.grad(); g.defined()) {
      const double n = norm(g.to(kFloat64)).item<double>();
      local += n * n;
    }
  Tensor sum = full({1}, Scalar(local), TensorOptions().dtype(kFloat64).device(shards.front().device()));
  if (group.size() > 1) group.all_reduce(sum, ReduceOp::Sum)->wait();
  const double total = std::sqrt(sum.item<double>());
  if (!std::isfinite(total)) return total;  // left to the caller, as nn::optim::clip_grad_norm_ does
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0)
    for (const Tensor& s : shards)
      if (Tensor g = s.grad(); g.defined()) g.mul_(Scalar(coef));
  return total;
}

}  // namespace anvil::distributed
