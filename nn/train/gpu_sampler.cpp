#include "nn/train/gpu_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace anvil::nn::train {

namespace {
// NVML's C types, as declared in nvml.h (stable ABI since NVML 1.0).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;
}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;  // milliwatts
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
};

std::shared_ptr<Nvml> Nvml::load() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  std::shared_ptr<Nvml> nvml(new Nvml());
  nvml->library_ = lib;
  nvml->api_ = std::make_unique<Api>();
  Api& a = *nvml->api_;
  auto resolve = [&](auto& fn, const char* name, const char* fallback) {
    void* sym = dlsym(lib, name);
    if (!sym && fallback) sym = dlsym(lib, fallback);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
    return sym != nullptr;
  };
  bool ok = resolve(a.init, "nvmlInit_v2", "nvmlInit") && resolve(a.shutdown, "nvmlShutdown", nullptr) &&
            resolve(a.device_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount") &&
            resolve(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex") &&
            resolve(a.utilization, "nvmlDeviceGetUtilizationRates", nullptr) &&
            resolve(a.memory, "nvmlDeviceGetMemoryInfo", nullptr);
  resolve(a.power, "nvmlDeviceGetPowerUsage", nullptr);  // optional
  resolve(a.name, "nvmlDeviceGetName", nullptr);  // optional
  if (!ok || a.init() != NVML_SUCCESS) {
    a.shutdown = nullptr;  // nothing to shut down
    return nullptr;  // the destructor closes the library
  }
  if (nvml->device_count() == 0) return nullptr;
  return nvml;
}

Nvml::~Nvml() {
  if (api_ && api_->shutdown) api_->shutdown();
  if (library_) dlclose(library_);
}

int Nvml::device_count() const {
  unsigned int n = 0;
  return api_->device_count(&n) == NVML_SUCCESS ? static_cast<int>(n) : 0;
}

std::optional<GpuSample> Nvml::sample(int nvml_index) const {
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(static_cast<unsigned>(nvml_index), &dev) != NVML_SUCCESS) return std::nullopt;
  nvmlUtilization_t util{};
  nvmlMemory_t mem{};
  if (api_->utilization(dev, &util) != NVML_SUCCESS || api_->memory(dev, &mem) != NVML_SUCCESS) return std::nullopt;
  GpuSample s;
  s.utilization = util.gpu;
  s.memory_used = static_cast<double>(mem.used);
  s.memory_total = static_cast<double>(mem.total);
  unsigned int mw = 0;
  if (api_->power && api_->power(dev, &mw) == NVML_SUCCESS) s.power_watts = mw / 1000.0;
  return s;
}

std::string Nvml::device_name(int nvml_index) const {
  nvmlDevice_t dev = nullptr;
  char buf[96] = {};
  if (!api_->name || api_->handle_by_index(static_cast<unsigned>(nvml_index), &dev) != NVML_SUCCESS ||
      api_->name(dev, buf, sizeof buf) != NVML_SUCCESS)
    return "";
  return buf;
}

int nvml_index_for_cuda_device(int cuda_index) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible || !*visible) return cuda_index;
  std::vector<int> ids;
  std::stringstream ss(visible);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // UUIDs ("GPU-...") and MIG names cannot be mapped without more NVML
    // calls; fall back to the CUDA index.
    if (item.empty() || item.find_first_not_of("0123456789 ") != std::string::npos) return cuda_index;
    ids.push_back(std::stoi(item));
  }
  return cuda_index >= 0 && cuda_index < static_cast<int>(ids.size()) ? ids[static_cast<size_t>(cuda_index)]
                                                                      : cuda_index;
}

GpuSummary summarize(const std::vector<GpuSample>& samples) {
  GpuSummary s;
  s.samples = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  double util = 0, power = 0;
  int power_n = 0;
  for (const GpuSample& x : samples) {
    util += x.utilization;
    s.max_utilization = std::max(s.max_utilization, x.utilization);
    s.max_memory_used = std::max(s.max_memory_used, x.memory_used);
    s.memory_total = std::max(s.memory_total, x.memory_total);
    if (x.power_watts >= 0) {
      power += x.power_watts;
      ++power_n;
      s.max_power_watts = std::max(s.max_power_watts, x.power_watts);
    }
  }
  s.mean_utilization = util / static_cast<double>(samples.size());
  if (power_n) s.mean_power_watts = power / power_n;
  return s;
}

GpuSampler::GpuSampler(std::shared_ptr<Nvml> nvml, int nvml_index, std::chrono::milliseconds interval)
    : nvml_(std::move(nvml)), index_(nvml_index), interval_(interval), start_(std::chrono::steady_clock::now()) {}

GpuSampler::~GpuSampler() { stop(); }

void GpuSampler::start() {
  if (!nvml_ || thread_.joinable()) return;
  stop_ = false;
  start_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

void GpuSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void GpuSampler::run() {
  while (!stop_) {
    if (auto s = nvml_->sample(index_)) {
      s->time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      add(*s);
    }
    // Short sleeps so stop() returns quickly.
    auto until = std::chrono::steady_clock::now() + interval_;
    while (!stop_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min(interval_, std::chrono::milliseconds(10)));
  }
}

void GpuSampler::add(const GpuSample& s) {
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.push_back(s);
}

std::vector<GpuSample> GpuSampler::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

std::optional<GpuSample> GpuSampler::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (samples_.empty()) return std::nullopt;
  return samples_.back();
}

GpuSummary GpuSampler::summary() const { return summarize(samples()); }

}  // namespace anvil::nn::train
