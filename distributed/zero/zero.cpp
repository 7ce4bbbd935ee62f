#include "distributed/zero/zero.h"

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/describe.h"
#include "core/factory.h"
#include "distributed/ddp/ddp.h"
#include "distributed/zero/sharded_grad_norm.h"

namespace anvil::distributed {

// The parameters in buckets, each flattened and sharded on its own; and, for
// stage 2, the per-backward state of the gradient hooks.
class ZeroAdamW::Buckets : public std::enable_shared_from_this<Buckets> {
 public:
  Buckets(ProcessGroup& group, const std::vector<Tensor>& params, int64_t cap_bytes)
      : group_(group), params_(params), bucket_of_(params.size()), slot_of_(params.size()) {
    int64_t open_bytes = 0;
    for (size_t i = params.size(); i-- > 0;) {  // reverse: backward's order
      const int64_t bytes = static_cast<int64_t>(params[i].nbytes());
      if (list_.empty() || (open_bytes > 0 && open_bytes + bytes > cap_bytes)) {
        list_.emplace_back();
        open_bytes = 0;
      }
      bucket_of_[i] = list_.size() - 1;
      slot_of_[i] = list_.back().params.size();
      list_.back().params.push_back(i);
      open_bytes += bytes;
    }
    NoGradGuard no_grad;
    for (Bucket& b : list_) {
      std::vector<Tensor> ps = bucket_params(b);
      b.layout = FlatShardLayout(ps, group_.size(), "ZeroAdamW");
      Tensor flat = empty({b.layout.padded_numel()}, ps.front().options());
      b.layout.flatten_into(ps, flat);
      b.shard = flat.narrow(0, b.layout.shard_begin(group_.rank()), b.layout.shard_size()).clone().requires_grad_();
    }
    reset();
  }

  size_t size() const { return list_.size(); }
  std::vector<Tensor> shards() const {
    std::vector<Tensor> out;
    for (const Bucket& b : list_) out.push_back(b.shard);
    return out;
  }
  int64_t shard_numel() const {
    int64_t n = 0;
    for (const Bucket& b : list_) n += b.layout.shard_size();
    return n;
  }
  int64_t total_numel() const {
    int64_t n = 0;
    for (const Bucket& b : list_) n += b.layout.total_numel();
    return n;
  }
  int64_t gradient_bytes() const {
    int64_t bytes = 0;
    for (const Tensor& p : params_)
      if (Tensor g = p.grad(); g.defined()) bytes += static_cast<int64_t>(g.nbytes());
    for (const Bucket& b : list_) {
      for (const Tensor& t : {b.flat_grad, b.slice, b.shard.grad()})
        if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
    }
    return bytes;
  }

  // Stage 1, in step(): every bucket's local gradients reduce-scattered now.
  void reduce_local_grads() {
    NoGradGuard no_grad;
    for (Bucket& b : list_) {
      std::vector<Tensor> grads;
      for (const Tensor& p : bucket_params(b)) grads.push_back(p.grad());
      b.flat_grad = empty({b.layout.padded_numel()}, b.shard.options());
      b.layout.flatten_into(grads, b.flat_grad);
      b.shard.set_grad(Tensor());
      launch(b);
    }
    next_ = list_.size();
    finish();
  }

  // Stage 2, from a parameter's post-accumulate hook. Never blocks: autograd
  // runs these hooks under a process-wide lock.
  void on_grad_ready(size_t index) {
    if (!callback_queued_) {
      std::weak_ptr<Buckets> weak = weak_from_this();
      autograd::queue_callback([weak] {
        if (auto b = weak.lock()) b->finish();
      });
      callback_queued_ = true;
    }
    Bucket& b = list_[bucket_of_[index]];
    NoGradGuard no_grad;
    if (!b.flat_grad.defined()) b.flat_grad = zeros({b.layout.padded_numel()}, b.shard.options());
    const size_t slot = slot_of_[index];
    b.layout.view_of(b.flat_grad, slot).add_(params_[index].grad());
    params_[index].set_grad(Tensor());  // its values live in the bucket now
    if (!b.seen[slot]) {
      b.seen[slot] = true;
      --b.pending;
    }
    // Buckets start strictly in index order, so every rank issues the same
    // sequence of collectives even if its hooks fire in another order.
    while (next_ < list_.size() && list_[next_].pending == 0) launch(list_[next_++]);
  }

  // End of backward (stage 2), or the end of reduce_local_grads: waits for
  // the reduce-scatters and adds each mean slice to its shard's .grad().
  void finish() {
    callback_queued_ = false;
    // A bucket some of whose parameters got no gradient: they count as zeros.
    for (; next_ < list_.size(); ++next_)
      if (list_[next_].flat_grad.defined()) launch(list_[next_]);
    NoGradGuard no_grad;
    for (Bucket& b : list_) {
      if (!b.work) continue;
      WorkHandle work = std::move(b.work);
      b.work = nullptr;
      work->wait();
      b.slice.div_(Scalar(static_cast<int64_t>(group_.size())));
      if (Tensor g = b.shard.grad(); g.defined()) {
        g.add_(b.slice);
      } else {
        b.shard.set_grad(b.slice);
      }
      b.flat_grad = Tensor();
      b.slice = Tensor();
    }
    reset();
  }

  // After the update: every rank gets every bucket's updated slices.
  void gather_params() {
    NoGradGuard no_grad;
    for (Bucket& b : list_) {
      Tensor flat = empty({b.layout.padded_numel()}, b.shard.options());
      if (group_.size() == 1) {
        flat.copy_(b.shard.detach());
      } else {
        group_.all_gather(flat, b.shard.detach())->wait();
      }
      std::vector<Tensor> views = b.layout.views_of(flat);
      for (size_t k = 0; k < b.params.size(); ++k) params_[b.params[k]].detach().copy_(views[k]);
    }
  }

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    FlatShardLayout layout;
    Tensor shard;  // this rank's slice of the parameters: what AdamW updates
    Tensor flat_grad, slice;  // the bucket's gradients, and this rank's reduced slice
    WorkHandle work;
    std::vector<bool> seen;
    size_t pending = 0;
  };

  std::vector<Tensor> bucket_params(const Bucket& b) const {
    std::vector<Tensor> out;
    for (size_t i : b.params) out.push_back(params_[i]);
    return out;
  }
  void launch(Bucket& b) {
    b.slice = empty({b.layout.shard_size()}, b.shard.options());
    if (group_.size() == 1) {
      b.slice.copy_(b.flat_grad);
      b.work = completed_work();
    } else {
      b.work = group_.reduce_scatter(b.slice, b.flat_grad, ReduceOp::Sum);
    }
  }
  void reset() {
    for (Bucket& b : list_) {
      b.seen.assign(b.params.size(), false);
      b.pending = b.params.size();
    }
    next_ = 0;
  }

  ProcessGroup& group_;
  std::vector<Tensor> params_;
  std::vector<size_t> bucket_of_, slot_of_;
  std::vector<Bucket> list_;
  size_t next_ = 0;
  bool callback_queued_ = false;
};

ZeroAdamW::ZeroAdamW(std::vector<Tensor> params, std::shared_ptr<ProcessGroup> group, nn::optim::AdamWOptions options,
                     ZeroOptions zero)
    : OptimizerWith("ZeroAdamW", std::vector<Group>{Group(std::move(params))}, options),
      group_(std::move(group)),
      zero_(zero) {
  ANVIL_CHECK(group_ != nullptr, "ZeroAdamW: got a null process group");
  ANVIL_CHECK(zero_.stage == 1 || zero_.stage == 2, "ZeroAdamW: stage must be 1 or 2, got ", zero_.stage,
              " (stage 3, parameters sharded too, is distributed::FullyShardedDataParallel)");
  ANVIL_CHECK(zero_.bucket_cap_bytes > 0, "ZeroAdamW: bucket_cap_bytes must be positive, got ", zero_.bucket_cap_bytes);
  const std::vector<Tensor>& ps = this->params(0);
  ANVIL_CHECK(!ps.empty(), "ZeroAdamW: got no parameters");
  for (const Tensor& p : ps) {
    ANVIL_CHECK(p.dtype() == ps.front().dtype() && p.device() == ps.front().device(),
                "ZeroAdamW: every parameter must share one dtype and device; got ", detail::describe(ps.front()),
                " and ", detail::describe(p));
    ANVIL_CHECK(p.is_leaf(), "ZeroAdamW: got a parameter that is not a leaf tensor: ", detail::describe(p));
  }
  broadcast_tensors(*group_, ps, 0);
  buckets_ = std::make_shared<Buckets>(*group_, ps, zero_.bucket_cap_bytes);
  nn::optim::AdamWOptions inner = options;
  shard_optimizer_ = std::make_unique<nn::optim::AdamW>(buckets_->shards(), inner);
  if (zero_.stage == 2) {
    std::weak_ptr<Buckets> weak = buckets_;
    for (size_t i = 0; i < ps.size(); ++i)
      ps[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
        if (auto b = weak.lock()) b->on_grad_ready(i);
      });
  }
}

// The hooks hold only a weak reference: once the buckets are gone they do nothing.
ZeroAdamW::~ZeroAdamW() = default;

void ZeroAdamW::step() {
  NoGradGuard no_grad;
  // 1. Mean gradient of this rank's slices (stage 2: already there).
  if (zero_.stage == 1) {
    buckets_->reduce_local_grads();
  } else {
    buckets_->finish();  // nothing when backward's callback already ran
    for (const Tensor& s : buckets_->shards())
      if (!s.grad().defined()) s.set_grad(zeros(s.shape(), s.options()));  // no backward: a zero gradient
  }

  // 2. AdamW on the slices, with this optimizer's current hyper-parameters
  //    (an LR scheduler changes ours).
  shard_optimizer_->options(0) = options(0);
  shard_optimizer_->step();
  if (zero_.stage == 2)
    for (const Tensor& s : buckets_->shards()) s.set_grad(Tensor());  // consumed: the next backward starts anew

  // 3. Every rank gets every updated slice.
  buckets_->gather_params();
}

double ZeroAdamW::clip_grad_norm_(double max_norm) {
  ANVIL_CHECK(zero_.stage == 2,
              "ZeroAdamW::clip_grad_norm_: needs stage 2; in stage 1 the gradients are averaged "
              "only inside step(), so clip them before with nn::optim::clip_grad_norm_ on "
              "all-reduced gradients, or use stage 2");
  return clip_sharded_grad_norm_(*group_, buckets_->shards(), max_norm, "ZeroAdamW::clip_grad_norm_");
}

int64_t ZeroAdamW::optimizer_state_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& shard : buckets_->shards()) {
    const nn::optim::ParamState* s = shard_optimizer_->state_of(shard);
    if (!s) continue;
    for (const auto& [name, t] : s->buffers) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

int64_t ZeroAdamW::unsharded_optimizer_state_bytes() const {
  return 2 * total_numel() * static_cast<int64_t>(itemsize(params(0).front().dtype()));
}

int64_t ZeroAdamW::gradient_bytes() const { return buckets_->gradient_bytes(); }
size_t ZeroAdamW::num_buckets() const { return buckets_->size(); }
int64_t ZeroAdamW::shard_size() const { return buckets_->shard_numel(); }
int64_t ZeroAdamW::total_numel() const { return buckets_->total_numel(); }

nn::optim::OptimizerState ZeroAdamW::shard_state_dict() const { return shard_optimizer_->state_dict(); }

}  // namespace anvil::distributed
