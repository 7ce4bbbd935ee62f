#include "distributed/zero.h"

#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "distributed/ddp.h"

namespace anvil::distributed {

ZeroAdamW::ZeroAdamW(std::vector<Tensor> params, std::shared_ptr<ProcessGroup> group, nn::optim::AdamWOptions options)
    : OptimizerWith("ZeroAdamW", std::vector<Group>{Group(std::move(params))}, options), group_(std::move(group)) {
  ANVIL_CHECK(group_ != nullptr, "ZeroAdamW: got a null process group");
  const std::vector<Tensor>& ps = this->params(0);
  ANVIL_CHECK(!ps.empty(), "ZeroAdamW: got no parameters");
  for (const Tensor& p : ps)
    ANVIL_CHECK(p.dtype() == ps.front().dtype() && p.device() == ps.front().device(),
                "ZeroAdamW: every parameter must share one dtype and device; got ", detail::describe(ps.front()),
                " and ", detail::describe(p));
  layout_ = FlatShardLayout(ps, group_->size(), "ZeroAdamW");

  broadcast_tensors(*group_, ps, 0);
  NoGradGuard no_grad;
  Tensor flat = empty({layout_.padded_numel()}, ps.front().options());
  layout_.flatten_into(ps, flat);
  shard_param_ = flat.narrow(0, shard_begin(), shard_size()).clone().requires_grad_();
  nn::optim::AdamWOptions inner = options;
  shard_optimizer_ = std::make_unique<nn::optim::AdamW>(std::vector<Tensor>{shard_param_}, inner);
}

ZeroAdamW::~ZeroAdamW() = default;

void ZeroAdamW::step() {
  NoGradGuard no_grad;
  const int64_t n = group_->size();
  const std::vector<Tensor>& ps = params(0);

  // 1. Mean gradient of this rank's slice.
  std::vector<Tensor> grads;
  for (const Tensor& p : ps) grads.push_back(p.grad());
  Tensor flat_grad = empty({layout_.padded_numel()}, ps.front().options());
  layout_.flatten_into(grads, flat_grad);
  Tensor shard_grad = empty({shard_size()}, ps.front().options());
  if (n == 1) {
    shard_grad.copy_(flat_grad);
  } else {
    group_->reduce_scatter(shard_grad, flat_grad, ReduceOp::Sum)->wait();
    shard_grad.div_(Scalar(n));
  }

  // 2. AdamW on the slice, with this optimizer's current hyper-parameters
  //    (an LR scheduler changes ours).
  shard_optimizer_->options(0) = options(0);
  shard_param_.set_grad(shard_grad);
  shard_optimizer_->step();

  // 3. Every rank gets every updated slice.
  Tensor flat_param = empty({layout_.padded_numel()}, ps.front().options());
  if (n == 1) {
    flat_param.copy_(shard_param_.detach());
  } else {
    group_->all_gather(flat_param, shard_param_.detach())->wait();
  }
  std::vector<Tensor> views = layout_.views_of(flat_param);
  for (size_t i = 0; i < ps.size(); ++i) ps[i].detach().copy_(views[i]);
}

int64_t ZeroAdamW::optimizer_state_bytes() const {
  const nn::optim::ParamState* s = shard_optimizer_->state_of(shard_param_);
  if (!s) return 0;
  int64_t bytes = 0;
  for (const auto& [name, t] : s->buffers) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

int64_t ZeroAdamW::unsharded_optimizer_state_bytes() const {
  return 2 * layout_.total_numel() * static_cast<int64_t>(itemsize(params(0).front().dtype()));
}

nn::optim::OptimizerState ZeroAdamW::shard_state_dict() const { return shard_optimizer_->state_dict(); }

}  // namespace anvil::distributed
