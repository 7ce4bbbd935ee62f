#include "nn/serialize/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"

namespace anvil::nn::serialize {

namespace {

constexpr const char* kReservedPrefix = "anvil.";
constexpr const char* kFormatKey = "anvil.format";
constexpr const char* kFormat = "checkpoint";
constexpr const char* kVersionKey = "anvil.format_version";
constexpr const char* kVersion = "1";
// CRC32 of every tensor (name, dtype, shape, bytes) in name order, so a flipped
// byte anywhere in the data is caught on load. Absent in older checkpoints.
constexpr const char* kChecksumKey = "anvil.crc32";

std::string checksum_of(const StateDict& tensors) {
  std::vector<const std::pair<std::string, Tensor>*> sorted;
  for (const auto& entry : tensors)
    if (entry.second.defined()) sorted.push_back(&entry);  // undefined: the writer's own check names it
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  uLong crc = crc32(0L, Z_NULL, 0);
  auto feed = [&](const void* p, size_t n) {
    const auto* bytes = static_cast<const Bytef*>(p);
    while (n > 0) {  // crc32 takes a uInt length
      const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
      crc = crc32(crc, bytes, chunk);
      bytes += chunk;
      n -= chunk;
    }
  };
  NoGradGuard no_grad;
  for (const auto* entry : sorted) {
    const Tensor data = entry->second.detach().cpu().contiguous();
    const std::string head = entry->first + '\0' + dtype_name(data.dtype()) + data.shape_str();
    feed(head.data(), head.size());
    feed(data.data_ptr(), data.nbytes());
  }
  char text[9];
  std::snprintf(text, sizeof text, "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  return text;
}

// Written and read through memory rather than fill kernels so every int64
// (and the uint64 bits of the RNG state) survives exactly.
Tensor int64_scalar(int64_t value) {
  Tensor t = empty({}, kInt64);
  *t.data<int64_t>() = value;
  return t;
}

using Section = std::map<std::string, Tensor>;

const Tensor& required(const Section& section, const std::string& prefix, const std::string& key,
                       const std::string& where) {
  auto it = section.find(key);
  ANVIL_CHECK(it != section.end(), where, ": '", prefix, key, "' is missing");
  return it->second;
}

int64_t read_int64(const Section& section, const std::string& prefix, const std::string& key,
                   const std::string& where) {
  const Tensor& t = required(section, prefix, key, where);
  ANVIL_CHECK(t.dtype() == kInt64 && t.numel() == 1, where, ": '", prefix, key, "' must be one int64, got ", t.dtype(),
              " of shape ", t.shape_str());
  return *t.data<int64_t>();
}

void check_only(const Section& section, const std::string& prefix, const std::vector<std::string>& known,
                const std::string& where) {
  for (const auto& [key, _] : section) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == key;
    ANVIL_CHECK(ok, where, ": unexpected entry '", prefix, key, "'");
  }
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& c) {
  const std::string where = "save_checkpoint('" + path.string() + "')";
  StateDict all;
  auto add = [&](const std::string& prefix, const StateDict& part) {
    for (const auto& [name, t] : part) all.emplace_back(prefix + name, t);
  };
  add("model.", c.model);
  if (c.optimizer) add("optimizer.", optim::flatten(*c.optimizer));
  if (c.scheduler) {
    all.emplace_back("scheduler.last_step", int64_scalar(c.scheduler->last_step));
    const auto n = static_cast<int64_t>(c.scheduler->base_lrs.size());
    all.emplace_back("scheduler.base_lrs", from_vector(c.scheduler->base_lrs, {n}, kFloat64));
  }
  if (c.rng) {
    all.emplace_back("rng.seed", int64_scalar(static_cast<int64_t>(c.rng->seed)));
    all.emplace_back("rng.offset", int64_scalar(static_cast<int64_t>(c.rng->offset)));
  }
  all.emplace_back("progress.step", int64_scalar(c.step));
  all.emplace_back("progress.epoch", int64_scalar(c.epoch));
  add("extra.", c.extra);

  Metadata metadata = c.metadata;
  for (const auto& [key, _] : metadata)
    ANVIL_CHECK(key.rfind(kReservedPrefix, 0) != 0, where, ": metadata key '", key, "' uses the reserved prefix '",
                kReservedPrefix, "'");
  metadata.insert_or_assign(kFormatKey, std::string(kFormat));
  metadata.insert_or_assign(kVersionKey, std::string(kVersion));
  metadata.insert_or_assign(kChecksumKey, checksum_of(all));
  save_safetensors(path, all, metadata);
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  const std::string where = "load_checkpoint('" + path.string() + "')";
  SafetensorsContents contents = load_safetensors_with_metadata(path);

  auto format = contents.metadata.find(kFormatKey);
  ANVIL_CHECK(format != contents.metadata.end() && format->second == kFormat, where,
              ": not an anvil checkpoint (metadata '", kFormatKey, "' is ",
              format == contents.metadata.end() ? std::string("missing") : "'" + format->second + "'",
              "; for a plain state dict use load_safetensors)");
  auto version = contents.metadata.find(kVersionKey);
  ANVIL_CHECK(version != contents.metadata.end() && version->second == kVersion, where,
              ": unsupported checkpoint format version '",
              version == contents.metadata.end() ? std::string("(missing)") : version->second,
              "' (this anvil reads version ", kVersion, ")");
  auto stored = contents.metadata.find(kChecksumKey);
  if (stored != contents.metadata.end()) {
    const std::string computed = checksum_of(contents.tensors);
    ANVIL_CHECK(computed == stored->second, where, ": the file is corrupt: its data's CRC32 is ", computed,
                " but the checkpoint recorded ", stored->second,
                " when it was saved (a flipped byte on disk or in transfer; load an older checkpoint)");
    contents.metadata.erase(stored);
  }

  Checkpoint c;
  StateDict optimizer;
  Section scheduler, rng, progress;
  for (auto& [name, t] : contents.tensors) {
    const size_t dot = name.find('.');
    const std::string prefix = dot == std::string::npos ? std::string() : name.substr(0, dot);  // "": unexpected
    std::string rest = dot == std::string::npos ? std::string() : name.substr(dot + 1);
    if (prefix == "model")
      c.model.emplace_back(std::move(rest), std::move(t));
    else if (prefix == "optimizer")
      optimizer.emplace_back(std::move(rest), std::move(t));
    else if (prefix == "scheduler")
      scheduler.emplace(std::move(rest), std::move(t));
    else if (prefix == "rng")
      rng.emplace(std::move(rest), std::move(t));
    else if (prefix == "progress")
      progress.emplace(std::move(rest), std::move(t));
    else if (prefix == "extra")
      c.extra.emplace_back(std::move(rest), std::move(t));
    else
      fail(where, ": unexpected entry '", name,
           "' (expected model., optimizer., scheduler., rng., progress. or extra.)");
  }

  if (!optimizer.empty()) {
    try {
      c.optimizer = optim::unflatten(optimizer);
    } catch (const Error& e) {
      fail(where, ": bad optimizer state (keys are prefixed 'optimizer.'): ", e.what());
    }
  }
  if (!scheduler.empty()) {
    check_only(scheduler, "scheduler.", {"last_step", "base_lrs"}, where);
    optim::SchedulerState s;
    s.last_step = read_int64(scheduler, "scheduler.", "last_step", where);
    const Tensor& lrs = required(scheduler, "scheduler.", "base_lrs", where);
    ANVIL_CHECK(lrs.dtype() == kFloat64 && lrs.dim() == 1, where, ": 'scheduler.base_lrs' must be 1-D float64, got ",
                lrs.dtype(), " of shape ", lrs.shape_str());
    s.base_lrs = lrs.to_vector<double>();
    c.scheduler = std::move(s);
  }
  if (!rng.empty()) {
    check_only(rng, "rng.", {"seed", "offset"}, where);
    c.rng = GeneratorState{static_cast<uint64_t>(read_int64(rng, "rng.", "seed", where)),
                           static_cast<uint64_t>(read_int64(rng, "rng.", "offset", where))};
  }
  check_only(progress, "progress.", {"step", "epoch"}, where);
  c.step = read_int64(progress, "progress.", "step", where);
  c.epoch = read_int64(progress, "progress.", "epoch", where);

  contents.metadata.erase(kFormatKey);
  contents.metadata.erase(kVersionKey);
  c.metadata = std::move(contents.metadata);
  return c;
}

}  // namespace anvil::nn::serialize
