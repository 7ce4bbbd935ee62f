#include "distributed/fsdp/fsdp.h"

#include <algorithm>
#include <set>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "distributed/ddp/ddp.h"
#include "distributed/zero/sharded_grad_norm.h"

namespace anvil::distributed {
namespace {

// Parameters shared by two units (or, with FsdpWrapped, left outside every
// unit) cannot be sharded: each unit flattens its own.
void check_units_cover_each_parameter_once(
    const nn::Module& model, const std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>& units) {
  std::set<const TensorImpl*> seen;
  for (const auto& [uname, unit] : units) {
    std::set<const TensorImpl*> own;
    for (const auto& [pname, p] : unit->named_parameters()) {
      if (!own.insert(p.impl()).second) continue;  // tied inside one unit: flattened once each
      ANVIL_CHECK(seen.insert(p.impl()).second, "FullyShardedDataParallel: parameter '", uname, ".", pname,
                  "' is shared with another unit; weights tied across units are not supported");
    }
  }
  for (const auto& [pname, p] : model.named_parameters())
    ANVIL_CHECK(seen.count(p.impl()) == 1, "FullyShardedDataParallel: parameter '", pname,
                "' lies outside every FsdpWrapped unit; wrap the module that holds it too");
}

std::string flat_param_name(std::string unit_name) {
  for (char& c : unit_name)
    if (c == '.') c = '_';  // parameter names cannot hold dots
  return "flat_param_" + unit_name;
}

}  // namespace

FsdpWrapped::FsdpWrapped(std::shared_ptr<nn::Module> m) : nn::Module("FsdpWrapped"), module(std::move(m)) {
  ANVIL_CHECK(module != nullptr, "FsdpWrapped: got a null module");
  register_module("module", module);
}

Tensor FsdpWrapped::forward(const Tensor& x) {
  if (!owner_) return module->forward(x);
  return owner_->run_unit(unit_index_, [&] { return module->forward(x); });
}

Tensor FsdpWrapped::forward_inputs(const std::vector<Tensor>& inputs) {
  if (!owner_) return module->forward_inputs(inputs);
  return owner_->run_unit(unit_index_, [&] { return module->forward_inputs(inputs); });
}

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<nn::Module> model,
                                                   std::shared_ptr<ProcessGroup> group, FSDPOptions options)
    : nn::Module("FullyShardedDataParallel"),
      model_(std::move(model)),
      group_(std::move(group)),
      options_(options),
      alive_(std::make_shared<bool>(true)) {
  ANVIL_CHECK(model_ != nullptr, "FullyShardedDataParallel: got a null model");
  ANVIL_CHECK(group_ != nullptr, "FullyShardedDataParallel: got a null process group");
  std::vector<std::pair<std::string, std::shared_ptr<FsdpWrapped>>> wrapped;
  for (const auto& [name, m] : model_->named_modules())
    if (auto w = std::dynamic_pointer_cast<FsdpWrapped>(m)) {
      ANVIL_CHECK(w->owner_ == nullptr, "FullyShardedDataParallel: unit '", name,
                  "' already belongs to another FullyShardedDataParallel");
      for (const auto& [outer, _] : wrapped)
        ANVIL_CHECK(name.rfind(outer + ".", 0) != 0, "FullyShardedDataParallel: unit '", name,
                    "' is nested inside unit '", outer, "'; units cannot nest");
      wrapped.emplace_back(name, w);
    }
  sequential_ = wrapped.empty() ? std::dynamic_pointer_cast<nn::Sequential>(model_) : nullptr;
  ANVIL_CHECK(!wrapped.empty() || sequential_, "FullyShardedDataParallel: the model (", model_->type_name(),
              ") is not an nn::Sequential and holds no FsdpWrapped units; wrap its layers in distributed::FsdpWrapped");

  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> units;
  if (sequential_) {
    for (const auto& [cname, child] : sequential_->named_children()) {
      const bool has_params = !child->parameters().empty();
      unit_of_child_.push_back(has_params ? static_cast<int>(units.size()) : -1);
      if (has_params) units.emplace_back(cname, child);
    }
  } else {
    for (const auto& [name, w] : wrapped) units.emplace_back(name + ".module", w->module);
  }
  ANVIL_CHECK(!units.empty(), "FullyShardedDataParallel: the model has no parameters to shard");
  check_units_cover_each_parameter_once(*model_, units);
  broadcast_tensors(*group_, model_->parameters(), 0);
  broadcast_tensors(*group_, model_->buffers(), 0);
  for (const auto& [name, m] : units) add_unit(name, m);
  for (size_t i = 0; i < wrapped.size(); ++i) {
    wrapped[i].second->owner_ = this;
    wrapped[i].second->unit_index_ = i;
  }

  std::weak_ptr<bool> alive = alive_;
  for (size_t u = 0; u < units_.size(); ++u)
    for (size_t k = 0; k < units_[u]->params().size(); ++k)
      units_[u]->params()[k].register_post_accumulate_grad_hook([this, alive, u, k](const Tensor&) {
        if (alive.lock()) on_param_grad(u, k);
      });
}

void FullyShardedDataParallel::add_unit(const std::string& name, std::shared_ptr<nn::Module> module) {
  const DType compute = options_.param_dtype.value_or(module->parameters().front().dtype());
  units_.push_back(std::make_unique<FsdpUnit>(name, std::move(module), *group_, compute));
  register_parameter(flat_param_name(name), units_.back()->shard());
}

// The hooks check `alive_` first, so they do nothing once this is gone.
FullyShardedDataParallel::~FullyShardedDataParallel() {
  for (const auto& [name, m] : model_->named_modules())
    if (auto w = std::dynamic_pointer_cast<FsdpWrapped>(m); w && w->owner_ == this) w->owner_ = nullptr;
}

void FullyShardedDataParallel::train(bool on) {
  nn::Module::train(on);
  model_->train(on);
}

Tensor FullyShardedDataParallel::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined(), "FullyShardedDataParallel::forward: got an undefined input tensor");
  // A backward that failed part-way never ran its callback; the next one must queue its own.
  if (!autograd::in_backward_pass()) callback_queued_ = false;
  // Mixed precision: the input is cast to the compute dtype, as torch's
  // MixedPrecision(cast_forward_inputs) does; the output stays in it.
  Tensor out = options_.param_dtype && is_floating(x.dtype()) ? x.to(*options_.param_dtype) : x;
  if (!sequential_) return model_->forward(out);  // its FsdpWrapped units call run_unit
  size_t child = 0;
  for (const auto& m : *sequential_) {
    const int u = unit_of_child_[child++];
    out = u < 0 ? m->forward(out) : run_unit(static_cast<size_t>(u), [&] { return m->forward(out); });
  }
  return out;
}

Tensor FullyShardedDataParallel::run_unit(size_t index, const std::function<Tensor()>& compute) {
  FsdpUnit& unit = *units_[index];
  unit.wait_gather();
  if (options_.forward_prefetch && index + 1 < units_.size()) units_[index + 1]->start_gather();
  note_memory();
  Tensor out = compute();
  if (autograd::GradMode::is_enabled() && out.defined() && out.requires_grad()) {
    std::weak_ptr<bool> alive = alive_;
    out.register_hook([this, alive, index](const Tensor&) {
      if (alive.lock()) before_unit_backward(index);
      return Tensor();
    });
  }
  // The last unit stays: backward begins with it.
  if (frees_after_use() && index + 1 < units_.size()) unit.free_full_params();
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
