#include "nn/train/monitor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/base/error.h"
#include "core/cpu_info.h"
#include "core/memory.h"

namespace anvil::nn::train {

namespace {
std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
}  // namespace

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return fixed(seconds, 1) + "s";
  const int64_t s = static_cast<int64_t>(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

double MonitorSummary::other_s() const {
  return std::max(0.0, wall_s - data_wait_s - host_s - device_wait_s - validation_s);
}

Monitor::Monitor(MonitorContext context, MonitorOptions options) : context_(context), options_(options) {
  std::shared_ptr<Nvml> nvml;
  if (context_.device.is_cuda() && options_.use_nvml) nvml = Nvml::load();
  sampler_ = std::make_unique<GpuSampler>(nvml, nvml_index_for_cuda_device(context_.device.index),
                                          options_.gpu_sample_interval);
}

Monitor::~Monitor() { stop(); }

void Monitor::start() {
  try {
    reset_peak_memory_stats(context_.device);
  } catch (const Error&) {
    // No backend or no allocator for this device: the report says memory is unknown.
  }
  totals_ = MonitorSummary{};
  start_ = std::chrono::steady_clock::now();
  running_ = true;
  sampler_->start();
}

void Monitor::stop() {
  if (!running_) return;
  totals_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  sampler_->stop();
  if (auto m = memory_stats()) {
    totals_.memory = *m;
    totals_.has_memory = true;
  }
  running_ = false;
}

void Monitor::add_step(const StepTimes& t) {
  ++totals_.steps;
  totals_.samples += t.samples;
  totals_.data_wait_s += t.data_wait_s;
  totals_.host_s += t.host_s;
  totals_.device_wait_s += t.device_wait_s;
}

void Monitor::add_validation(double seconds) { totals_.validation_s += seconds; }

std::optional<MemoryStats> Monitor::memory_stats() const {
  try {
    return anvil::memory_stats(context_.device);
  } catch (const Error&) {
    return std::nullopt;
  }
}

MonitorSummary Monitor::summary() const {
  MonitorSummary s = totals_;
  if (running_) {
    s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (auto m = memory_stats()) s.memory = *m, s.has_memory = true;
  }
  s.gpu = sampler_->summary();
  return s;
}

std::string Monitor::report() const { return format_report(summary(), context_); }

std::vector<std::string> advice(const MonitorSummary& s, const MonitorContext& c) {
  std::vector<std::string> out;
  const double step_time = s.data_wait_s + s.host_s + s.device_wait_s;
  const bool gpu = c.device.is_cuda();
  if (step_time > 0 && s.data_wait_s / step_time > 0.15) {
    std::string a = "Training waited for data " + percent(s.data_wait_s, step_time) +
                    " of step time: give the DataLoader more workers (num_workers is " + std::to_string(c.num_workers) +
                    ")";
    if (gpu && !c.pin_memory) a += ", set pin_memory = true so copies to the GPU overlap compute";
    if (!gpu)
      a += "; on CPU the workers share cores with the training math, so also make batches cheap: a dataset "
           "that overrides get_batch (one index_select), and transforms done once up front";
    out.push_back(a + ".");
  }
  if (gpu && s.gpu.samples > 0 && s.gpu.mean_utilization < 60) {
    std::string a = "GPU utilization averaged " + fixed(s.gpu.mean_utilization, 0) +
                    "%: the GPU is starved. Raise the batch size (now " + std::to_string(c.batch_size) +
                    "; find_max_batch_size finds the largest that fits)";
    if (c.num_workers == 0) a += ", load data in worker threads (num_workers > 0)";
    if (!c.pin_memory) a += ", set pin_memory = true";
    if (c.precision == Precision::FP32) a += ", and train in mixed precision (precision = bf16)";
    out.push_back(a + ".");
  }
  if (gpu && c.precision == Precision::FP32 && (s.gpu.samples == 0 || s.gpu.mean_utilization >= 60))
    out.push_back(
        "Training runs in fp32: precision = bf16 halves activation memory and traffic and uses tensor "
        "cores.");
  if (gpu && s.has_memory && s.gpu.memory_total > 0 &&
      static_cast<double>(s.memory.peak_reserved_bytes) < 0.4 * s.gpu.memory_total)
    out.push_back("Peak memory was " + format_bytes(static_cast<double>(s.memory.peak_reserved_bytes)) + " of " +
                  format_bytes(s.gpu.memory_total) + ": a larger batch size would likely fit.");
  if (step_time > 0 && s.wall_s > 0 && s.other_s() / s.wall_s > 0.25)
    out.push_back(
        "A quarter or more of the wall time went outside training steps and validation (logging, "
        "checkpoints, callbacks): log or checkpoint less often.");
  return out;
}

std::string format_report(const MonitorSummary& s, const MonitorContext& c) {
  std::ostringstream os;
  const bool gpu = c.device.is_cuda();
  os << "==== anvil training report ====\n";
  os << "Device: " << c.device.str() << ", precision " << precision_name(c.precision) << ", batch size " << c.batch_size
     << ", loader workers " << c.num_workers << (c.pin_memory ? ", pinned memory" : "") << "\n";
  // On the CPU the speed depends on which GEMM and conv kernels run: name them.
  if (c.device.is_cpu()) os << "CPU: " << to_string(cpu_capability()) << "\n";
  os << "Steps: " << s.steps << " in " << format_duration(s.wall_s);
  if (s.wall_s > 0)
    os << " (" << fixed(static_cast<double>(s.steps) / s.wall_s, 2) << " steps/s, "
       << fixed(static_cast<double>(s.samples) / s.wall_s, 1) << " samples/s)";
  os << "\n\nWhere step time went:\n";
  auto row = [&](const char* name, double seconds) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-44s %10.3f s  %s\n", name, seconds, percent(seconds, s.wall_s).c_str());
    os << buf;
  };
  row("waiting for data (DataLoader)", s.data_wait_s);
  row("host work (forward, backward, optimizer)", s.host_s);
  if (gpu)
    row("waiting for the GPU (reading results back)", s.device_wait_s);
  else
    os << "  waiting for the GPU                                 n/a (CPU ops run synchronously)\n";
  row("validation", s.validation_s);
  row("other (logging, callbacks, checkpoints)", s.other_s());

  os << "\nMemory:\n";
  if (s.has_memory)
    os << "  peak allocated " << format_bytes(static_cast<double>(s.memory.peak_allocated_bytes)) << ", peak reserved "
       << format_bytes(static_cast<double>(s.memory.peak_reserved_bytes)) << " (" << c.device.str() << " allocator; "
       << s.memory.device_mallocs << " device mallocs, " << s.memory.cache_hits << " cache hits)\n";
  else
    os << "  n/a (no allocator statistics for " << c.device.str() << ")\n";

  os << "\nGPU:\n";
  if (!gpu)
    os << "  n/a (training on " << c.device.str() << ")\n";
  else if (s.gpu.samples == 0)
    os << "  n/a (NVML not available: no libnvidia-ml.so.1 or no readings)\n";
  else {
    os << "  utilization " << fixed(s.gpu.mean_utilization, 0) << "% mean, " << fixed(s.gpu.max_utilization, 0)
       << "% max over " << s.gpu.samples << " samples\n";
    os << "  memory used " << format_bytes(s.gpu.max_memory_used) << " max of " << format_bytes(s.gpu.memory_total)
       << " (all processes)\n";
    if (s.gpu.mean_power_watts >= 0)
      os << "  power " << fixed(s.gpu.mean_power_watts, 0) << " W mean, " << fixed(s.gpu.max_power_watts, 0)
         << " W max\n";
  }

  os << "\nAdvice:\n";
  const std::vector<std::string> tips = advice(s, c);
  if (tips.empty()) os << "  nothing stands out: steps are dominated by compute.\n";
  for (const std::string& t : tips) os << "  - " << t << "\n";
  return os.str();
}

}  // namespace anvil::nn::train
