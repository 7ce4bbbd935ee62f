#pragma once
// Shared pieces of the training benchmarks (build/bin/bench_train): how long
// a run is and how throughput is reported, so every model reports the same way.
//
// One benchmark iteration is a fixed number of optimizer steps (forward,
// backward, AdamW step) over batches prepared before timing, so the numbers
// are the model's training speed without data loading. Steps run on the CPU
// with OpenMP on every core, or on the GPU that ANVIL_BENCH_DEVICE names
// (cuda, cuda:N); on the CPU run with OMP_WAIT_POLICY=PASSIVE as run.sh does
// (spinning OpenMP threads stall every op when anything else uses a core).
#include <benchmark/benchmark.h>

#include <anvil/anvil.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "kernels/cuda_info.h"
#include "nn/train/gpu_sampler.h"

namespace anvil::bench {

// The device ANVIL_BENCH_DEVICE names (cpu when unset), or nullopt after
// marking the benchmark skipped with the reason (no such device, bad name).
inline std::optional<Device> bench_device(benchmark::State& state) {
  const char* env = std::getenv("ANVIL_BENCH_DEVICE");
  const std::string name = env != nullptr && *env != '\0' ? env : "cpu";
  try {
    const Device device(name);
    if (device.is_cuda() && (!cuda::is_available() || device.index >= cuda::device_count())) {
      state.SkipWithError(("ANVIL_BENCH_DEVICE=" + name + ": no such CUDA device here").c_str());
      return std::nullopt;
    }
    state.SetLabel(device.str());
    return device;
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return std::nullopt;
  }
}

// GPU utilization over the timed iterations (NVML, when present), reported
// as the counters gpu_util_mean and gpu_util_max in percent. Does nothing
// on the CPU or without NVML.
class GpuUtilization {
 public:
  explicit GpuUtilization(Device device) {
    if (device.is_cuda())
      sampler_ = std::make_unique<nn::train::GpuSampler>(
          nn::train::Nvml::load(), nn::train::nvml_index_for_cuda_device(device.index), std::chrono::milliseconds(50));
    if (sampler_) sampler_->start();
  }
  void report(benchmark::State& state) {
    if (!sampler_) return;
    sampler_->stop();
    const nn::train::GpuSummary s = sampler_->summary();
    if (s.samples == 0) return;
    state.counters["gpu_util_mean"] = s.mean_utilization;
    state.counters["gpu_util_max"] = s.max_utilization;
  }

 private:
  std::unique_ptr<nn::train::GpuSampler> sampler_;
};

// Untimed steps before the first iteration: the first step allocates the
// optimizer's state and fills the allocator's caches.
inline constexpr int64_t kWarmupSteps = 3;

// Few, long iterations: a training step is milliseconds to a second here,
// so three iterations of tens of steps give stable numbers while the whole
// binary stays within a few minutes on two cores.
inline constexpr int64_t kIterations = 3;

// Wall time, since CPU time would add up every OpenMP thread's time.
inline void training_run(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->Iterations(kIterations)->Unit(benchmark::kMillisecond);
}

// Examples (or tokens) trained per second of wall time.
inline void set_items_per_iteration(benchmark::State& state, const char* name, double items) {
  state.counters[name] = benchmark::Counter(items, benchmark::Counter::kIsIterationInvariantRate);
}

// Seconds one epoch of `steps_per_epoch` steps would take at the measured
// speed: the inverse of epochs per second.
inline void set_epoch_seconds(benchmark::State& state, int64_t steps_per_iteration, int64_t steps_per_epoch) {
  state.counters["epoch_seconds"] =
      benchmark::Counter(static_cast<double>(steps_per_iteration) / static_cast<double>(steps_per_epoch),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Wall time of one optimizer step, printed with an SI prefix ("45m" is 45 ms).
inline void set_step_seconds(benchmark::State& state, int64_t steps_per_iteration) {
  state.counters["step_time"] =
      benchmark::Counter(static_cast<double>(steps_per_iteration),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace anvil::bench
