#include "distributed/ddp/ddp.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "distributed/comm_hooks/counting_process_group.h"

namespace anvil::distributed {

// ---------------------------------------------------------------------------
// broadcast_tensors

void broadcast_tensors(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  if (group.size() == 1 || tensors.empty()) return;
  NoGradGuard no_grad;
  // Coalesce by (device, dtype), keeping the order inside each group.
  std::map<std::tuple<int, int, int>, std::vector<Tensor>> groups;
  for (const Tensor& t : tensors) {
    ANVIL_CHECK(t.defined(), "broadcast_tensors: got an undefined tensor");
    groups[{static_cast<int>(t.device().type), t.device().index, static_cast<int>(t.dtype())}].push_back(t.detach());
  }
  for (auto& [key, ts] : groups) {
    int64_t total = 0;
    for (const Tensor& t : ts) total += t.numel();
    if (total == 0) continue;
    Tensor flat = empty({total}, ts.front().options());
    int64_t at = 0;
    if (group.rank() == root)
      for (const Tensor& t : ts) {
        flat.narrow(0, at, t.numel()).view(t.shape()).copy_(t);
        at += t.numel();
      }
    group.broadcast(flat, root)->wait();
    if (group.rank() == root) continue;
    at = 0;
    for (Tensor t : ts) {
      t.copy_(flat.narrow(0, at, t.numel()).view(t.shape()));
      at += t.numel();
    }
  }
}

// ---------------------------------------------------------------------------
// Reducer: buckets, the per-backward readiness state, launch and write-back.

class DistributedDataParallel::Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  Reducer(ProcessGroup& group, const nn::NamedTensors& named_params, const DDPOptions& options)
      : counting_group_(group), options_(options), hook_(allreduce_hook) {
    // Reverse registration order approximates the order backward produces
    // gradients, so the first bucket completes first.
    for (auto it = named_params.rbegin(); it != named_params.rend(); ++it) {
      if (!it->second.requires_grad()) continue;
      ANVIL_CHECK(it->second.is_leaf(), "DistributedDataParallel: parameter '", it->first, "' is not a leaf tensor");
      slots_.push_back({it->second, it->first});
    }
    Bucket* open = nullptr;
    int64_t open_bytes = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Tensor& p = slots_[i].param;
      const int64_t cap = buckets_.size() == 1 ? std::min(options_.first_bucket_cap_bytes, options_.bucket_cap_bytes)
                                               : options_.bucket_cap_bytes;
      const bool fits = open && open->dtype == p.dtype() && open->device == p.device() &&
                        (open_bytes == 0 || open_bytes + static_cast<int64_t>(p.nbytes()) <= cap);
      if (!fits) {
        buckets_.push_back({});
        open = &buckets_.back();
        open->dtype = p.dtype();
        open->device = p.device();
        open_bytes = 0;
      }
      slots_[i].bucket = buckets_.size() - 1;
      slots_[i].offset = open->numel;
      open->slots.push_back(i);
      open->numel += p.numel();
      open_bytes += static_cast<int64_t>(p.nbytes());
    }
    for (Bucket& b : buckets_)
      b.buffer = zeros({std::max<int64_t>(1, b.numel)}, TensorOptions().dtype(b.dtype).device(b.device));
    reset();
  }

  size_t num_slots() const { return slots_.size(); }
  const Tensor& param(size_t i) const { return slots_[i].param; }

  std::vector<std::vector<std::string>> bucket_names() const {
    std::vector<std::vector<std::string>> out;
    for (const Bucket& b : buckets_) {
      out.emplace_back();
      for (size_t i : b.slots) out.back().push_back(slots_[i].name);
    }
    return out;
  }

  void set_hook(CommHook hook) {
    ANVIL_CHECK(!hook_registered_,
                "DistributedDataParallel::register_comm_hook: a hook is already registered; "
                "register one hook, once");
    ANVIL_CHECK(hook != nullptr, "DistributedDataParallel::register_comm_hook: got an empty hook");
    ANVIL_CHECK(stats_.steps == 0 && !expect_sync_,
                "DistributedDataParallel::register_comm_hook: register the hook before the first forward/backward, "
                "so every step uses the same one on every rank");
    hook_ = std::move(hook);
    hook_registered_ = true;
  }

  const DistributedDataParallel::CommStats& stats() const { return stats_; }

  // From forward: whether the backward of this forward averages gradients.
  void prepare(bool sync) { expect_sync_ = sync; }

  // From a parameter's post-accumulate-grad hook.
  void on_grad_ready(size_t index) {
    if (!expect_sync_) return;
    Slot& s = slots_[index];
    ANVIL_CHECK(!s.ready, "DistributedDataParallel: parameter '", s.name,
                "' received a gradient twice in one synced backward pass; run the extra backward passes under "
                "no_sync(), or call finish_gradient_synchronization() between them");
    if (!finalize_queued_) {
      std::weak_ptr<Reducer> weak = weak_from_this();
      autograd::queue_callback([weak] {
        if (auto r = weak.lock()) r->finalize();
      });
      finalize_queued_ = true;
    }
    s.ready = true;
    NoGradGuard no_grad;
    slice(s).copy_(s.param.grad());
    Bucket& b = buckets_[s.bucket];
    if (--b.pending == 0 && options_.overlap_communication) launch_ready_buckets();
  }

  // At the end of backward (or by hand): every bucket reduced and written back.
  void finalize() {
    finalize_queued_ = false;
    // Nothing pending (already finished, or no synced backward ran yet):
    // keep the state forward set for the coming backward.
    if (!expect_sync_ || !any_ready()) return;
    std::vector<std::string> missing;
    for (Slot& s : slots_)
      if (!s.ready) missing.push_back(s.name);
    if (!missing.empty() && !options_.find_unused_parameters) {
      abandon();
      std::ostringstream names;
      for (size_t i = 0; i < missing.size(); ++i) names << (i ? ", " : "") << missing[i];
      fail("DistributedDataParallel: these parameters received no gradient in this backward pass: ", names.str(),
           ". Every parameter must take part in computing the loss on every rank; if some do not, construct DDP "
           "with find_unused_parameters = true (their gradients are then averaged as zeros)");
    }
    NoGradGuard no_grad;
    for (Slot& s : slots_) {
      if (s.ready) continue;
      slice(s).zero_();
      s.ready = true;
      --buckets_[s.bucket].pending;
    }
    launch_ready_buckets();
    try {
      write_back_results();
    } catch (const Error&) {
      abandon();  // the other buckets' collectives finish; the next step starts clean
      throw;
    }
    record_step();
    reset();
  }

 private:
  // Waits for each bucket's future in index order and writes its result
  // (the averaged gradients) into the parameters' .grad().
  void write_back_results() {
    for (size_t k = 0; k < buckets_.size(); ++k) {
      Bucket& b = buckets_[k];
      BucketFutureHandle future = std::move(b.future);  // waited on once, even if this throws
      Tensor result = future->wait();
      ANVIL_CHECK(
          result.defined() && result.numel() == b.numel && result.dtype() == b.dtype && result.device() == b.device,
          "DistributedDataParallel: the comm hook's result for bucket ", k, " must be a flat tensor of ", b.numel,
          " elements, ", b.dtype, ", on ", b.device, " (the bucket's buffer); got ",
          result.defined() ? std::to_string(result.numel()) + " elements" : std::string("an undefined tensor"));
      for (size_t i : b.slots) {
        Slot& s = slots_[i];
        Tensor avg = result.narrow(0, s.offset, s.param.numel()).view(s.param.shape());
        Tensor g = s.param.grad();
        if (g.defined()) {
          g.copy_(avg);
        } else {
          s.param.set_grad(avg.clone());  // an unused parameter (find_unused_parameters)
        }
      }
    }
  }

  struct Slot {
    Tensor param;
    std::string name;
    size_t bucket = 0;
    int64_t offset = 0;
    bool ready = false;
  };
  struct Bucket {
    DType dtype = kFloat32;
    Device device = Device::cpu();
    std::vector<size_t> slots;
    int64_t numel = 0;
    Tensor buffer;
    int64_t pending = 0;
    std::unique_ptr<GradBucket> view;  // what the hook got; alive until its future is waited on
    BucketFutureHandle future;
  };

  Tensor slice(const Slot& s) const {
    return buckets_[s.bucket].buffer.narrow(0, s.offset, s.param.numel()).view(s.param.shape());
  }
  bool any_ready() const {
    for (const Slot& s : slots_)
      if (s.ready) return true;
    return false;
  }
  // Buckets start strictly in index order, so every rank issues the same
  // sequence of collectives even if its hooks fire in another order.
  void launch_ready_buckets() {
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
      const size_t index = next_bucket_++;
      Bucket& b = buckets_[index];
      std::vector<Tensor> params;
      std::vector<std::string> names;
      std::vector<int64_t> offsets;
      for (size_t i : b.slots) {
        params.push_back(slots_[i].param);
        names.push_back(slots_[i].name);
        offsets.push_back(slots_[i].offset);
      }
      b.view = std::make_unique<GradBucket>(index, index + 1 == buckets_.size(), b.buffer.narrow(0, 0, b.numel),
                                            std::move(params), std::move(names), std::move(offsets), counting_group_);
      b.future = hook_(*b.view);
      ANVIL_CHECK(b.future != nullptr, "DistributedDataParallel: the comm hook returned no future for bucket ", index);
    }
  }
  void record_step() {
    stats_.last_step_bytes = counting_group_.bytes() - bytes_before_step_;
    stats_.last_step_collectives = counting_group_.collectives() - collectives_before_step_;
    bytes_before_step_ = counting_group_.bytes();
    collectives_before_step_ = counting_group_.collectives();
    stats_.total_bytes = counting_group_.bytes();
    ++stats_.steps;
  }
  // After an error: let launched collectives finish so their buffers are not
  // in use, then start over.
  void abandon() {
    for (Bucket& b : buckets_) {
      if (!b.future) continue;
      try {
        b.future->wait();
      } catch (const Error&) {
      }
    }
    // What was sent is not a step; the next step counts from here.
    bytes_before_step_ = counting_group_.bytes();
    collectives_before_step_ = counting_group_.collectives();
    reset();
  }
  void reset() {
    for (Slot& s : slots_) s.ready = false;
    for (Bucket& b : buckets_) {
      b.pending = static_cast<int64_t>(b.slots.size());
      b.future = nullptr;
      b.view.reset();
    }
    next_bucket_ = 0;
    expect_sync_ = false;
    finalize_queued_ = false;
  }

  CountingProcessGroup counting_group_;  // DDP's group, counting what the hooks send through it
  DDPOptions options_;
  CommHook hook_;
  bool hook_registered_ = false;
  DistributedDataParallel::CommStats stats_;
  int64_t bytes_before_step_ = 0, collectives_before_step_ = 0;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  size_t next_bucket_ = 0;
  bool expect_sync_ = false;
  bool finalize_queued_ = false;
};

// ---------------------------------------------------------------------------
// DistributedDataParallel

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group, DDPOptions options)
    : nn::Module("DistributedDataParallel"), module_(std::move(module)), group_(std::move(group)), options_(options) {
  ANVIL_CHECK(module_ != nullptr, "DistributedDataParallel: got a null module");
  ANVIL_CHECK(group_ != nullptr, "DistributedDataParallel: got a null process group");
  ANVIL_CHECK(options_.bucket_cap_bytes > 0, "DistributedDataParallel: bucket_cap_bytes must be positive, got ",
              options_.bucket_cap_bytes);
  ANVIL_CHECK(options_.first_bucket_cap_bytes > 0,
              "DistributedDataParallel: first_bucket_cap_bytes must be positive, got ", options_.first_bucket_cap_bytes,
              " (the first bucket's size limit; it is capped at bucket_cap_bytes, default 1 MiB)");
  register_module("module", module_);
  // Every replica starts from rank 0's state.
  broadcast_tensors(*group_, module_->parameters(), 0);
  broadcast_tensors(*group_, module_->buffers(), 0);
  reducer_ = std::make_shared<Reducer>(*group_, module_->named_parameters(), options_);
  if (group_->size() == 1) return;  // nothing to average
  std::weak_ptr<Reducer> weak = reducer_;
  for (size_t i = 0; i < reducer_->num_slots(); ++i)
    reducer_->param(i).register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto r = weak.lock()) r->on_grad_ready(i);
    });
}

// The hooks hold only a weak reference: once the reducer is gone they do nothing.
DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::before_forward() {
  if (group_->size() > 1) {
    if (options_.broadcast_buffers && is_training()) broadcast_tensors(*group_, module_->buffers(), 0);
    reducer_->prepare(sync_enabled_ && autograd::GradMode::is_enabled());
  }
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  before_forward();
  return module_->forward(x);
}

Tensor DistributedDataParallel::forward_inputs(const std::vector<Tensor>& inputs) {
  before_forward();
  return module_->forward_inputs(inputs);
}

void DistributedDataParallel::finish_gradient_synchronization() { reducer_->finalize(); }

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  return reducer_->bucket_names();
}

void DistributedDataParallel::register_comm_hook(CommHook hook) { reducer_->set_hook(std::move(hook)); }

DistributedDataParallel::CommStats DistributedDataParallel::comm_stats() const { return reducer_->stats(); }

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.sync_enabled_) {
  ddp_.sync_enabled_ = false;
}
DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { ddp_.sync_enabled_ = previous_; }

}  // namespace anvil::distributed
