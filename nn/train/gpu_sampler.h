#pragma once
/// @file
/// GPU utilization, memory and power from NVML, sampled on a background thread.
/// NVML (libnvidia-ml.so.1, installed with the NVIDIA driver) is loaded at run
/// time with dlopen, so anvil neither links it nor needs it: without the
/// library or a GPU, Nvml::load() returns null and the sampler reports nothing.
///
/// NVML numbers devices physically, ignoring CUDA_VISIBLE_DEVICES; the CUDA
/// index is mapped through that variable when it lists plain numbers.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace anvil::nn::train {

/// One NVML reading of a GPU.
struct GpuSample {
  double time_s = 0;  ///< since the sampler started
  double utilization = 0;  ///< percent of time a kernel ran, over the driver's last window
  double memory_used = 0;  ///< bytes, whole device (all processes)
  double memory_total = 0;  ///< bytes
  double power_watts = -1;  ///< -1 when the device does not report power
};

/// The few NVML entry points we use, resolved from the shared library.
class Nvml {
 public:
  /// Null when the library, its symbols or a GPU are missing, or init fails.
  static std::shared_ptr<Nvml> load();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  int device_count() const;  ///< Devices NVML sees.
  /// One reading of device `nvml_index`; nullopt if NVML refuses.
  std::optional<GpuSample> sample(int nvml_index) const;
  std::string device_name(int nvml_index) const;  ///< The device's name, as NVML reports it.

 private:
  struct Api;
  Nvml() = default;
  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
};

/// The NVML index of CUDA device `cuda_index` in this process.
int nvml_index_for_cuda_device(int cuda_index);

/// The readings of a run, summarised.
struct GpuSummary {
  int samples = 0;  ///< readings taken
  ///@{
  /// the mean and the largest utilization, percent
  double mean_utilization = 0, max_utilization = 0;
  ///@}
  ///@{
  /// the largest memory used, and the device's total, bytes
  double max_memory_used = 0, memory_total = 0;
  ///@}
  ///@{
  /// the mean and the largest power draw, watts (-1: not reported)
  double mean_power_watts = -1, max_power_watts = -1;
  ///@}
};

/// Samples one GPU through NVML on a background thread, for the Monitor and the progress bar.
class GpuSampler {
 public:
  /// Samples every `interval` while running. A null nvml makes a sampler that
  /// records nothing (so callers need not branch).
  GpuSampler(std::shared_ptr<Nvml> nvml, int nvml_index,
             std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  ~GpuSampler();  ///< stops
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  bool available() const { return nvml_ != nullptr; }  ///< Whether NVML was found (else it samples nothing).
  void start();  ///< Starts the sampling thread.
  void stop();  ///< Stops the sampling thread (idempotent).
  std::vector<GpuSample> samples() const;  ///< Every reading so far.
  std::optional<GpuSample> latest() const;  ///< The newest reading, if any.
  GpuSummary summary() const;  ///< The readings summarised.
  /// Adds a reading taken elsewhere (tests; or a caller with its own source).
  void add(const GpuSample& s);

 private:
  void run();
  std::shared_ptr<Nvml> nvml_;
  int index_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::vector<GpuSample> samples_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::chrono::steady_clock::time_point start_;
};

GpuSummary summarize(const std::vector<GpuSample>& samples);  ///< The summary of `samples`.

}  // namespace anvil::nn::train
