#include "distributed/fsdp.h"

#include <algorithm>
#include <set>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "distributed/ddp.h"
#include "distributed/sharded_grad_norm.h"

namespace anvil::distributed {
namespace {

void check_no_parameter_shared_across_children(const nn::Sequential& model) {
  std::set<const TensorImpl*> seen;
  for (const auto& [cname, child] : model.named_children()) {
    std::set<const TensorImpl*> own;
    for (const auto& [pname, p] : child->named_parameters()) {
      if (!own.insert(p.impl()).second) continue;  // tied inside one unit: fine, flattened once each
      ANVIL_CHECK(seen.insert(p.impl()).second, "FullyShardedDataParallel: parameter '", cname, ".", pname,
                  "' is shared with another unit; weights tied across units are not supported");
    }
  }
}

}  // namespace

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<nn::Sequential> model,
                                                   std::shared_ptr<ProcessGroup> group, FSDPOptions options)
    : nn::Module("FullyShardedDataParallel"), model_(std::move(model)), group_(std::move(group)),
      options_(options), alive_(std::make_shared<bool>(true)) {
  ANVIL_CHECK(model_ != nullptr, "FullyShardedDataParallel: got a null model");
  ANVIL_CHECK(group_ != nullptr, "FullyShardedDataParallel: got a null process group");
  check_no_parameter_shared_across_children(*model_);
  broadcast_tensors(*group_, model_->parameters(), 0);
  broadcast_tensors(*group_, model_->buffers(), 0);

  for (const auto& [cname, child] : model_->named_children()) {
    if (child->parameters().empty()) {
      unit_of_child_.push_back(-1);
      continue;
    }
    const DType compute = options_.param_dtype.value_or(child->parameters().front().dtype());
    unit_of_child_.push_back(static_cast<int>(units_.size()));
    units_.push_back(std::make_unique<FsdpUnit>(cname, child, *group_, compute));
    register_parameter("flat_param_" + cname, units_.back()->shard());
  }
  ANVIL_CHECK(!units_.empty(), "FullyShardedDataParallel: the model has no parameters to shard");

  std::weak_ptr<bool> alive = alive_;
  for (size_t u = 0; u < units_.size(); ++u)
    for (size_t k = 0; k < units_[u]->params().size(); ++k)
      units_[u]->params()[k].register_post_accumulate_grad_hook([this, alive, u, k](const Tensor&) {
        if (alive.lock()) on_param_grad(u, k);
      });
}

// The hooks check `alive_` first, so they do nothing once this is gone.
FullyShardedDataParallel::~FullyShardedDataParallel() = default;

void FullyShardedDataParallel::train(bool on) {
  nn::Module::train(on);
  model_->train(on);
}

Tensor FullyShardedDataParallel::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined(), "FullyShardedDataParallel::forward: got an undefined input tensor");
  const bool recording = autograd::GradMode::is_enabled();
  std::weak_ptr<bool> alive = alive_;
  // Mixed precision: the input is cast to the compute dtype, as torch's
  // MixedPrecision(cast_forward_inputs) does; the output stays in it.
  Tensor out = options_.param_dtype && is_floating(x.dtype()) ? x.to(*options_.param_dtype) : x;
  size_t child = 0;
  for (const auto& m : *model_) {
    const int u = unit_of_child_[child++];
    if (u < 0) {
      out = m->forward(out);
      continue;
    }
    const size_t index = static_cast<size_t>(u);
    FsdpUnit& unit = *units_[index];
    unit.wait_gather();
    if (options_.forward_prefetch && index + 1 < units_.size()) units_[index + 1]->start_gather();
    note_memory();
    out = m->forward(out);
    if (recording && out.requires_grad())
      out.register_hook([this, alive, index](const Tensor&) {
        if (alive.lock()) before_unit_backward(index);
        return Tensor();
      });
    // The last unit stays: backward begins with it.
    if (frees_after_use() && index + 1 < units_.size()) unit.free_full_params();
  }
  return out;
}

void FullyShardedDataParallel::ensure_backward_callback() {
  if (callback_queued_) return;
  std::weak_ptr<bool> alive = alive_;
  autograd::queue_callback([this, alive] {
    if (alive.lock()) finish_backward();
  });
  callback_queued_ = true;
}

void FullyShardedDataParallel::before_unit_backward(size_t index) {
  ensure_backward_callback();
  // Later units' reduce-scatters are done before this unit's gradients come:
  // at most one unit's full gradients wait for their reduction at a time.
  finish_pending_reduces();
  units_[index]->wait_gather();
  if (options_.backward_prefetch && index > 0) units_[index - 1]->start_gather();
  note_memory();
}

void FullyShardedDataParallel::on_param_grad(size_t unit_index, size_t param_index) {
  ensure_backward_callback();
  FsdpUnit& unit = *units_[unit_index];
  unit.mark_grad_ready(param_index);
  note_memory();
  if (!unit.all_grads_ready()) return;
  // Only starts it: post-accumulate hooks run under autograd's accumulation
  // lock, which every backward in the process shares (ranks run as threads
  // in the tests), so blocking here on a peer could deadlock.
  unit.start_grad_reduce();
  note_memory();
  if (frees_after_use()) unit.free_full_params();
}

void FullyShardedDataParallel::finish_pending_reduces() {
  for (auto& unit : units_)
    if (unit->grad_reduce_pending()) unit->finish_grad_reduce();
}

void FullyShardedDataParallel::finish_backward() {
  callback_queued_ = false;
  // Units some of whose parameters got no gradient, in backward's order so
  // every rank issues the same collectives.
  for (size_t u = units_.size(); u-- > 0;) {
    if (!units_[u]->any_grad_ready()) continue;
    finish_pending_reduces();
    units_[u]->start_grad_reduce();
  }
  finish_pending_reduces();
  if (frees_after_use())
    for (auto& unit : units_) unit->free_full_params();
}

void FullyShardedDataParallel::note_memory() {
  int64_t gathered = 0, grads = 0;
  for (const auto& unit : units_) {
    gathered += unit->gathered_bytes();
    grads += unit->full_grad_bytes();
  }
  peak_gathered_ = std::max(peak_gathered_, gathered);
  peak_full_grads_ = std::max(peak_full_grads_, grads);
}

double FullyShardedDataParallel::clip_grad_norm_(double max_norm) {
  // Shards are disjoint and their padding is zero: their squares add up to the global sum.
  std::vector<Tensor> shards;
  for (const auto& unit : units_) shards.push_back(unit->shard());
  return clip_sharded_grad_norm_(*group_, shards, max_norm, "FullyShardedDataParallel::clip_grad_norm_");
}

FSDPMemoryStats FullyShardedDataParallel::memory_stats() const {
  FSDPMemoryStats s;
  for (const auto& unit : units_) {
    const Tensor& shard = unit->shard();
    s.model_param_bytes += unit->layout().total_numel() * static_cast<int64_t>(itemsize(shard.dtype()));
    s.sharded_param_bytes += static_cast<int64_t>(shard.nbytes());
    if (Tensor g = shard.grad(); g.defined()) s.sharded_grad_bytes += static_cast<int64_t>(g.nbytes());
    s.largest_unit_bytes = std::max(s.largest_unit_bytes, unit->full_param_bytes());
  }
  s.peak_gathered_param_bytes = peak_gathered_;
  s.peak_full_grad_bytes = peak_full_grads_;
  return s;
}

void FullyShardedDataParallel::reset_peak_memory_stats() {
  peak_gathered_ = 0;
  peak_full_grads_ = 0;
  note_memory();
}

}  // namespace anvil::distributed
