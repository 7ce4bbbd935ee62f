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
  Device device = Device::cpu();  ///< the device training runs on
  int num_workers = 0;  ///< the train loader's workers
  bool pin_memory = false;  ///< whether the loader pins host memory
  int64_t batch_size = 0;  ///< examples per batch
  Precision precision = Precision::FP32;  ///< FP32, BF16 or FP16
};

/// The Monitor's sampling settings.
struct MonitorOptions {
  std::chrono::milliseconds gpu_sample_interval{100};  ///< how often the GPU sampler reads NVML
  bool use_nvml = true;  ///< false: no GPU readings even on a GPU (tests)
};

/// One training step's time in its phases, as the Trainer measures them.
struct StepTimes {
  double data_wait_s = 0;  ///< blocked on the data loader
  double host_s = 0;  ///< forward, backward and optimizer calls on the host
  double device_wait_s = 0;  ///< blocked on the device (reading the loss back)
  int64_t samples = 0;  ///< examples in the step (all accumulated micro-batches)
};

/// The totals of a run: steps, time per phase, peak memory and GPU readings.
struct MonitorSummary {
  ///@{
  /// optimizer steps and examples
  int64_t steps = 0, samples = 0;
  ///@}
  double wall_s = 0;  ///< start() to stop()
  ///@{
  /// seconds in the data wait, host work, device wait and validation
  double data_wait_s = 0, host_s = 0, device_wait_s = 0, validation_s = 0;
  ///@}
  double other_s() const;  ///< wall minus the phases above (never negative)
  MemoryStats memory;  ///< peak values since start()
  bool has_memory = false;  ///< whether memory holds the device allocator's numbers
  GpuSummary gpu;  ///< samples == 0 when no readings
};

/// Times the training phases, samples the GPU and writes the end-of-fit report (see the file comment).
class Monitor {
 public:
  explicit Monitor(MonitorContext context, MonitorOptions options = {});  ///< For a run described by `context`.
  ~Monitor();

  /// Resets the allocator's peak statistics and starts GPU sampling.
  void start();
  void stop();  ///< idempotent
  void add_step(const StepTimes& t);  ///< Adds one step's phase times.
  void add_validation(double seconds);  ///< Adds time spent in validation.
  /// Readings taken elsewhere (tests, or another source of GPU data).
  GpuSampler& gpu_sampler() { return *sampler_; }

  /// The GPU sampler's last reading, if any.
  std::optional<GpuSample> latest_gpu() const { return sampler_->latest(); }
  /// Current allocator statistics of the training device (nullopt if unavailable).
  std::optional<MemoryStats> memory_stats() const;
  MonitorSummary summary() const;  ///< The totals so far.
  std::string report() const;  ///< The report: the breakdown, memory, GPU readings and advice.
  const MonitorContext& context() const { return context_; }  ///< The run description it was made with.

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
