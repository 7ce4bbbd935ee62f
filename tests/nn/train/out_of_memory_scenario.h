#pragma once
// Out of memory in training, then training goes on (issue 17, item 4), on
// any device: under a cap on the device allocator (set_memory_limit) a fit
// at too large a batch fails with an error carrying the memory stats, the
// allocator has freed its cache, the model is untouched, the batch-size
// finder finds a batch that fits, and a fit at that batch finishes within
// the cap. Shared by the CPU test and the CUDA one (the emulated GPU in CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/base/caching_allocator.h"
#include "core/memory.h"
#include "nn/optim/optim.h"
#include "nn/train/batch_size_finder.h"
#include "nn/train/train.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil::testing {

// Removes the cap however the test ends: the allocator outlives the test.
struct MemoryLimitGuard {
  Device device;
  MemoryLimitGuard(Device d, size_t bytes) : device(d) { set_memory_limit(device, bytes); }
  ~MemoryLimitGuard() { set_memory_limit(device, 0); }
};

struct OutOfMemoryScenario {
  Device device;
  int64_t hidden;  // the MLP's width: activations are batch x hidden floats
  int64_t samples;  // dataset size
  int64_t too_big;  // a batch the cap must refuse
  int64_t probe;  // the small batch whose footprint sets the cap
  double cap_factor;  // cap = held before + max(cap_factor x what the probe allocates, what it
                      // reserved) + 2 small segments
  int64_t epochs = 2;  // of the final fit
};

inline std::vector<float> parameter_values(nn::Module& m) {
  std::vector<float> all;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.cpu().contiguous().to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

inline void run_out_of_memory_scenario(const OutOfMemoryScenario& s) {
  using namespace anvil::nn;
  auto data = blobs(s.samples, 32, 4, 5, 50);
  manual_seed(11);
  auto model = mlp(32, s.hidden, 4);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05));
  auto options = [&](int64_t max_steps) {
    train::TrainerOptions o;
    o.device = s.device;
    o.max_epochs = s.epochs;
    if (max_steps > 0) o.max_steps = max_steps;
    o.progress = train::ProgressMode::Off;
    o.print_report = false;
    return o;
  };

  // The cap: what this device holds now, a few times what a small batch
  // allocates on top, and room for two of the caching allocator's small
  // segments (what the batch allocates may need fresh ones).
  model->to(s.device);
  empty_cache(s.device);
  const MemoryStats held = memory_stats(s.device);
  reset_peak_memory_stats(s.device);
  {
    data::DataLoader probe(data, loader_options(s.probe));
    train::Trainer(options(2)).fit(task, probe, opt);
  }
  const MemoryStats probed = memory_stats(s.device);
  const int64_t growth = probed.peak_allocated_bytes - held.allocated_bytes;
  ASSERT_GT(growth, 0);
  // At least what the probe reserved: a 1-10 MiB block (oneDNN's scratchpad
  // for 16 threads is 4 MiB) takes a 20 MiB segment, which counts against the cap.
  const auto room = std::max(static_cast<int64_t>(s.cap_factor * static_cast<double>(growth)),
                             probed.peak_reserved_bytes - held.reserved_bytes);
  const int64_t slack = 2 * static_cast<int64_t>(CachingAllocatorOptions{}.small_segment_size);
  const int64_t base = held.reserved_bytes;
  const auto cap = static_cast<size_t>(base + room + slack);
  empty_cache(s.device);
  MemoryLimitGuard guard(s.device, cap);
  const std::vector<float> before = parameter_values(*model);
  const int64_t ooms_before = memory_stats(s.device).num_ooms;

  // 1. Too large a batch: a clear error with the stats; nothing trained.
  std::string message;
  try {
    data::DataLoader big(data, loader_options(s.too_big));
    train::Trainer(options(0)).fit(task, big, opt);
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_TRUE(train::is_out_of_memory(Error(message.empty() ? "none" : message)))
      << "a batch of " << s.too_big << " fit under a cap of " << cap << " bytes: " << message;
  for (const char* stat : {"allocated", "reserved", "limit"})
    EXPECT_NE(message.find(stat), std::string::npos) << stat << " missing from: " << message;
  EXPECT_GT(memory_stats(s.device).num_ooms, ooms_before);
  EXPECT_EQ(parameter_values(*model), before) << "the failed fit changed the model";
  // The failed try's memory is back in the cache, and empty_cache gives it all back.
  empty_cache(s.device);
  const MemoryStats after = memory_stats(s.device);
  EXPECT_LE(after.reserved_bytes, static_cast<int64_t>(cap));
  EXPECT_EQ(after.limit_bytes, static_cast<int64_t>(cap));

  // 2. The finder lowers the batch: it fits below the cap (start fits, too_big does not).
  const int64_t found = train::find_max_batch_size(*model, {32}, s.device, {.start = s.probe, .max = s.too_big});
  EXPECT_GE(found, s.probe);
  EXPECT_LT(found, s.too_big);
  EXPECT_EQ(parameter_values(*model), before) << "the finder changed the model";

  // 3. Training continues at the found batch, with the header's headroom, and finishes under the cap.
  const int64_t batch = std::max(s.probe, found * 3 / 4);
  reset_peak_memory_stats(s.device);
  data::DataLoader loader(data, loader_options(batch, true, 9));
  const train::FitResult r = train::Trainer(options(0)).fit(task, loader, opt);
  const int64_t steps_per_epoch = (s.samples + batch - 1) / batch;
  EXPECT_EQ(r.epochs_completed, s.epochs);
  EXPECT_EQ(r.global_step, s.epochs * steps_per_epoch);
  EXPECT_LE(memory_stats(s.device).peak_reserved_bytes, static_cast<int64_t>(cap));
  ASSERT_EQ(static_cast<int64_t>(r.step_losses.size()), r.global_step);
  for (double loss : r.step_losses) EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NE(parameter_values(*model), before) << "the fit at the found batch did not train";
  std::printf(
      "[ measured ] %s: cap %lld B (held %lld + max(%.1f x %lld, reserved growth) + 2 segments); batch %lld "
      "refused; finder %lld; trained at %lld, %lld steps, loss %.3g -> %.3g\n",
      s.device.str().c_str(), static_cast<long long>(cap), static_cast<long long>(base), s.cap_factor,
      static_cast<long long>(growth), static_cast<long long>(s.too_big), static_cast<long long>(found),
      static_cast<long long>(batch), static_cast<long long>(r.global_step), r.step_losses.front(),
      r.step_losses.back());
}

}  // namespace anvil::testing
