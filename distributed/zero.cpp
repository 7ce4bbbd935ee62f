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
  for (const Tensor& p : ps) {
    ANVIL_CHECK(p.dtype() == ps.front().dtype() && p.device() == ps.front().device(),
                "ZeroAdamW: every parameter must share one dtype and device; got ", detail::describe(ps.front()),
                " and ", detail::describe(p));
    total_ += p.numel();
  }
  const int64_t n = group_->size();
  shard_size_ = std::max<int64_t>(1, (total_ + n - 1) / n);

  broadcast_tensors(*group_, ps, 0);
  NoGradGuard no_grad;
  Tensor flat = zeros({shard_size_ * n}, ps.front().options());
  int64_t at = 0;
  for (const Tensor& p : ps) {
    flat.narrow(0, at, p.numel()).view(p.shape()).copy_(p.detach());
    at += p.numel();
  }
  shard_param_ = flat.narrow(0, shard_begin(), shard_size_).clone().requires_grad_();
  nn::optim::AdamWOptions inner = options;
  shard_optimizer_ = std::make_unique<nn::optim::AdamW>(std::vector<Tensor>{shard_param_}, inner);
}

ZeroAdamW::~ZeroAdamW() = default;

void ZeroAdamW::flatten_grads_into(Tensor& flat) const {
  int64_t at = 0;
  for (const Tensor& p : params(0)) {
    Tensor dst = flat.narrow(0, at, p.numel()).view(p.shape());
    Tensor g = p.grad();
    if (g.defined()) {
      dst.copy_(g);
    } else {
      dst.zero_();
    }
    at += p.numel();
  }
  // The padding past total_ stays zero: its parameters and moments stay zero too.
  if (at < flat.numel()) flat.narrow(0, at, flat.numel() - at).zero_();
}

void ZeroAdamW::scatter_params_from(const Tensor& flat) {
  int64_t at = 0;
  for (Tensor p : params(0)) {
    Tensor data = p.detach();
    data.copy_(flat.narrow(0, at, p.numel()).view(p.shape()));
    at += p.numel();
  }
}

void ZeroAdamW::step() {
  NoGradGuard no_grad;
  const int64_t n = group_->size();
  const Tensor& first = params(0).front();

  // 1. Mean gradient of this rank's slice.
  Tensor flat_grad = empty({shard_size_ * n}, first.options());
  flatten_grads_into(flat_grad);
  Tensor shard_grad = empty({shard_size_}, first.options());
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
  Tensor flat_param = empty({shard_size_ * n}, first.options());
  if (n == 1) {
    flat_param.copy_(shard_param_.detach());
  } else {
    group_->all_gather(flat_param, shard_param_.detach())->wait();
  }
  scatter_params_from(flat_param);
}

int64_t ZeroAdamW::optimizer_state_bytes() const {
  const nn::optim::ParamState* s = shard_optimizer_->state_of(shard_param_);
  if (!s) return 0;
  int64_t bytes = 0;
  for (const auto& [name, t] : s->buffers) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

int64_t ZeroAdamW::unsharded_optimizer_state_bytes() const {
  return 2 * total_ * static_cast<int64_t>(itemsize(params(0).front().dtype()));
}

nn::optim::OptimizerState ZeroAdamW::shard_state_dict() const { return shard_optimizer_->state_dict(); }

}  // namespace anvil::distributed
