#pragma once
/// @file
/// Training checkpoints: everything needed to resume a run exactly, in ONE
/// safetensors file (so Python tools can open it too), replaced atomically so a
/// crash mid-save leaves the previous checkpoint intact.
///
///     serialize::Checkpoint c;
///     c.model = model->state_dict();
///     c.optimizer = opt.state_dict();
///     c.scheduler = sched.state_dict();
///     c.rng = generator_state();
///     c.step = step; c.epoch = epoch;
///     serialize::save_checkpoint("run/last.safetensors", c);
///
///     auto r = serialize::load_checkpoint("run/last.safetensors");
///     model->load_state_dict(r.model);
///     if (r.optimizer) opt.load_state_dict(*r.optimizer);
///     if (r.scheduler) sched.load_state_dict(*r.scheduler);
///     if (r.rng) set_generator_state(*r.rng);
///
/// File layout (tensor names):
///
///     model.<name>                 the model's state dict
///     optimizer.<flat name>        optim::flatten(optimizer state)
///     scheduler.last_step          int64 scalar;  scheduler.base_lrs: float64 [groups]
///     rng.seed, rng.offset         int64 scalars holding the uint64 bits
///     progress.step, progress.epoch  int64 scalars
///     extra.<name>                 anything else the caller wants back
/// and metadata: the caller's strings plus "anvil.format" = "checkpoint" and
/// "anvil.format_version" (keys starting with "anvil." are reserved).
#include <cstdint>
#include <filesystem>
#include <optional>

#include "core/random.h"
#include "nn/module.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/optimizer.h"
#include "nn/serialize/safetensors.h"

namespace anvil::nn::serialize {

/// Everything a resumed run needs, in one file (see the file comment).
struct Checkpoint {
  StateDict model;  ///< the model's state dict
  std::optional<optim::OptimizerState> optimizer;  ///< unset: not saved (nor is a state with no groups)
  std::optional<optim::SchedulerState> scheduler;  ///< unset: not saved
  std::optional<GeneratorState> rng;  ///< the global generator; unset: not saved
  int64_t step = 0;  ///< optimizer updates done
  int64_t epoch = 0;  ///< epochs completed
  StateDict extra;  ///< e.g. a loss scaler's state, the best validation metric
  Metadata metadata;  ///< free-form strings (run name, config, ...)
};

/// Tensors are saved from any device; loading gives CPU tensors, in name order
/// within each part (optimizer hyper-parameters too). Load errors name the file
/// and the key.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);
/// Reads a checkpoint saved by save_checkpoint; errors name the file and the key.
Checkpoint load_checkpoint(const std::filesystem::path& path);

}  // namespace anvil::nn::serialize
