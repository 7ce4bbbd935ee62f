#pragma once
/// @file
/// Monitor: where training time goes, and what to do about it. The Trainer
/// times every step in three phases:
///
///     data wait    blocked in the DataLoader iterator for the next batch
///     host work    the forward, backward and optimizer calls (on CUDA these
///                  queue kernels; on CPU they do the arithmetic)
///     GPU wait     blocked reading the loss back, i.e. the GPU was still busy
///                  after the host finished queueing (CPU: n/a, ops are synchronous)
/// and the rest of the wall time is validation or other work (logging,
/// callbacks, checkpoints). The allocator gives peak memory; on a GPU, NVML
/// (when present) gives utilization, memory and power every ~100 ms.
///
/// At the end of fit the Trainer prints report(): the breakdown in seconds and
/// percent, memory, GPU readings, and advice (raise the batch size, add loader
/// workers, pin memory, use mixed precision) when the numbers call for it.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/allocator.h"
#include "core/base/device.h"
#include "nn/train/amp.h"
#include "nn/train/gpu_sampler.h"

namespace anvil::nn::train {

/// What the advice needs to know about the run.
struct MonitorContext {
  Device device = Device::cpu();
  int num_workers = 0;
  bool pin_memory = false;
  int64_t batch_size = 0;
  Precision precision = Precision::FP32;
};

struct MonitorOptions {
  std::chrono::milliseconds gpu_sample_interval{100};
  bool use_nvml = true;  ///< false: no GPU readings even on a GPU (tests)
};

struct StepTimes {
  double data_wait_s = 0;
  double host_s = 0;
  double device_wait_s = 0;
  int64_t samples = 0;  ///< examples in the step (all accumulated micro-batches)
};

struct MonitorSummary {
  int64_t steps = 0, samples = 0;
  double wall_s = 0;  ///< start() to stop()
  double data_wait_s = 0, host_s = 0, device_wait_s = 0, validation_s = 0;
  double other_s() const;  ///< wall minus the phases above (never negative)
  MemoryStats memory;  ///< peak values since start()
  bool has_memory = false;
  GpuSummary gpu;  ///< samples == 0 when no readings
};

class Monitor {
 public:
  explicit Monitor(MonitorContext context, MonitorOptions options = {});
  ~Monitor();

  /// Resets the allocator's peak statistics and starts GPU sampling.
  void start();
  void stop();  ///< idempotent
  void add_step(const StepTimes& t);
  void add_validation(double seconds);
  /// Readings taken elsewhere (tests, or another source of GPU data).
  GpuSampler& gpu_sampler() { return *sampler_; }

  std::optional<GpuSample> latest_gpu() const { return sampler_->latest(); }
  /// Current allocator statistics of the training device (nullopt if unavailable).
  std::optional<MemoryStats> memory_stats() const;
  MonitorSummary summary() const;
  std::string report() const;
  const MonitorContext& context() const { return context_; }

 private:
  MonitorContext context_;
  MonitorOptions options_;
  std::unique_ptr<GpuSampler> sampler_;
  MonitorSummary totals_;
  std::chrono::steady_clock::time_point start_;
  bool running_ = false;
};

/// The report for a summary (what Monitor::report() prints); separate so the
/// advice rules can be tested with made-up numbers.
std::string format_report(const MonitorSummary& s, const MonitorContext& context);
/// Advice lines alone (empty when nothing stands out).
std::vector<std::string> advice(const MonitorSummary& s, const MonitorContext& context);

std::string format_bytes(double bytes);  ///< "12.3 MiB"
std::string format_duration(double seconds);  ///< "1:02:03", "4:05", "12.3s"

}  // namespace anvil::nn::train
