// FullyShardedDataParallel's state dicts: full (gathered, the model's own
// names, as an unsharded model would give) and sharded (this rank's flat
// shards, for per-rank checkpoints).
#include <algorithm>

#include "core/autograd/grad_mode.h"
#include "core/describe.h"
#include "distributed/fsdp/fsdp.h"
#include "nn/serialize/safetensors.h"

namespace anvil::distributed {

nn::StateDict FullyShardedDataParallel::full_state_dict(bool rank0_only) const {
  const bool keep = !rank0_only || group_->rank() == 0;
  nn::StateDict out;
  for (const auto& unit : units_) {
    std::vector<Tensor> values = unit->gather_master_params();  // collective: every rank takes part
    if (!keep) continue;
    for (size_t k = 0; k < values.size(); ++k) out.emplace_back(unit->name() + "." + unit->param_names()[k], values[k]);
  }
  if (keep)
    for (const auto& [name, b] : model_->named_buffers()) out.emplace_back(name, b.detach().clone());
  return out;
}

void FullyShardedDataParallel::save_full_state_dict(const std::filesystem::path& path) const {
  nn::StateDict state = full_state_dict(/*rank0_only=*/true);
  if (group_->rank() == 0) nn::serialize::save_safetensors(path, state);
}

nn::StateDict FullyShardedDataParallel::sharded_state_dict() const {
  nn::StateDict out;
  for (const auto& [name, p] : named_parameters(/*recurse=*/false)) out.emplace_back(name, p.detach().clone());
  return out;
}

void FullyShardedDataParallel::load_sharded_state_dict(const nn::StateDict& state) {
  NoGradGuard no_grad;
  const nn::NamedTensors mine = named_parameters(/*recurse=*/false);  // one flat shard per unit, in unit order
  for (size_t u = 0; u < units_.size(); ++u) {
    const auto& unit = units_[u];
    const std::string& key = mine[u].first;
    auto it = std::find_if(state.begin(), state.end(), [&](const auto& e) { return e.first == key; });
    ANVIL_CHECK(it != state.end(), "FullyShardedDataParallel::load_sharded_state_dict: missing key '", key, "'");
    ANVIL_CHECK(it->second.shape() == unit->shard().shape(), "FullyShardedDataParallel::load_sharded_state_dict: '",
                key, "' is ", detail::describe(it->second), ", expected this rank's shard ",
                detail::describe(unit->shard()), " (a checkpoint of another world size or model?)");
    // The copy changes the shard's version, so the next forward gathers anew.
    unit->shard().detach().copy_(it->second);
  }
}

namespace {
std::filesystem::path shard_file(const std::string& prefix, int rank, int size) {
  return prefix + "rank" + std::to_string(rank) + "-of-" + std::to_string(size) + ".safetensors";
}
}  // namespace

std::filesystem::path FullyShardedDataParallel::save_sharded_state_dict(const std::string& prefix) const {
  const std::filesystem::path path = shard_file(prefix, group_->rank(), group_->size());
  nn::serialize::save_safetensors(
      path, sharded_state_dict(),
      {{"fsdp_world_size", std::to_string(group_->size())}, {"fsdp_rank", std::to_string(group_->rank())}});
  return path;
}

void FullyShardedDataParallel::load_sharded_state_dict_file(const std::string& prefix) {
  const std::filesystem::path path = shard_file(prefix, group_->rank(), group_->size());
  ANVIL_CHECK(std::filesystem::exists(path), "FullyShardedDataParallel::load_sharded_state_dict_file: no file ",
              path.string(), " for rank ", group_->rank(), " of ", group_->size(),
              " (was the checkpoint written by another world size?)");
  nn::serialize::SafetensorsContents contents = nn::serialize::load_safetensors_with_metadata(path);
  const auto world = contents.metadata.find("fsdp_world_size");
  ANVIL_CHECK(
      world != contents.metadata.end() && world->second == std::to_string(group_->size()),
      "FullyShardedDataParallel::load_sharded_state_dict_file: ", path.string(), " holds shards for world size ",
      world == contents.metadata.end() ? std::string("(none recorded)") : world->second, ", expected ", group_->size());
  load_sharded_state_dict(contents.tensors);
}

}  // namespace anvil::distributed
