#include <gtest/gtest.h>

#include "core/ops.h"
#include "kernels/cpu_info.h"
#include "nn/train/monitor.h"

namespace anvil {
namespace {

using namespace anvil::nn;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Monitor, ReportHasEverySectionOnCpu) {
  train::Monitor m({.device = Device::cpu(), .num_workers = 2, .batch_size = 64});
  m.start();
  Tensor keep = randn({1000});  // some allocator traffic
  m.add_step({.data_wait_s = 0.01, .host_s = 0.2, .device_wait_s = 0, .samples = 64});
  m.add_step({.data_wait_s = 0.01, .host_s = 0.2, .device_wait_s = 0, .samples = 64});
  m.add_validation(0.05);
  m.stop();
  const train::MonitorSummary s = m.summary();
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.samples, 128);
  EXPECT_DOUBLE_EQ(s.host_s, 0.4);
  EXPECT_TRUE(s.has_memory);
  EXPECT_GE(s.memory.peak_allocated_bytes, 4000);
  EXPECT_EQ(s.gpu.samples, 0);
  const std::string r = m.report();
  for (const char* section : {"Where step time went", "waiting for data", "host work", "validation",
                              "Memory:", "peak allocated", "GPU:", "Advice:"})
    EXPECT_TRUE(has(r, section)) << section << " missing from\n" << r;
  EXPECT_TRUE(has(r, "n/a (CPU ops run synchronously)")) << r;
  EXPECT_TRUE(has(r, "n/a (training on cpu)")) << r;
}

train::MonitorSummary made_up(double data, double host, double gpu_wait, double util) {
  train::MonitorSummary s;
  s.steps = 100;
  s.samples = 6400;
  s.data_wait_s = data;
  s.host_s = host;
  s.device_wait_s = gpu_wait;
  s.wall_s = data + host + gpu_wait + 0.01;
  if (util >= 0) {
    s.gpu.samples = 50;
    s.gpu.mean_utilization = util;
    s.gpu.max_utilization = util + 10;
    s.gpu.memory_total = 80.0 * (1ull << 30);
    s.gpu.max_memory_used = 60.0 * (1ull << 30);
  }
  return s;
}

TEST(Monitor, AdvisesMoreWorkersWhenDataWaitIsHigh) {
  const train::MonitorContext cpu{.device = Device::cpu(), .num_workers = 0, .batch_size = 32};
  auto tips = train::advice(made_up(3.0, 2.0, 0.0, -1), cpu);
  ASSERT_EQ(tips.size(), 1u);
  EXPECT_TRUE(has(tips[0], "num_workers is 0")) << tips[0];
  EXPECT_TRUE(has(tips[0], "on CPU")) << tips[0];
  EXPECT_TRUE(has(tips[0], "60.0%")) << tips[0];
  EXPECT_TRUE(train::advice(made_up(0.1, 5.0, 0.0, -1), cpu).empty());
  EXPECT_TRUE(has(train::format_report(made_up(0.1, 5.0, 0, -1), cpu), "nothing stands out"));
}

TEST(Monitor, CpuReportNamesTheGemmAndConvKernelsInUse) {
  const train::MonitorContext cpu{.device = Device::cpu(), .num_workers = 0, .batch_size = 32};
  const std::string r = train::format_report(made_up(0.1, 5.0, 0, -1), cpu);
  const CpuCapability c = cpu_capability();
  EXPECT_TRUE(has(r, "CPU: " + c.cpu_model)) << r;
  EXPECT_TRUE(has(r, "float32 GEMM " + c.float32_gemm.library + " " + c.float32_gemm.kernel)) << r;
  EXPECT_TRUE(has(r, "conv2d " + c.conv2d)) << r;
  EXPECT_TRUE(has(r, "vector math " + c.vector_math)) << r;
  const train::MonitorContext gpu{.device = Device::cuda(0), .num_workers = 0, .batch_size = 32};
  EXPECT_FALSE(has(train::format_report(made_up(0.1, 5.0, 0.5, 25.0), gpu), "float32 GEMM")) << "GPU report";
}

TEST(Monitor, AdvisesBiggerBatchesAndMixedPrecisionWhenTheGpuIsStarved) {
  const train::MonitorContext gpu{.device = Device::cuda(0), .num_workers = 0, .pin_memory = false, .batch_size = 16};
  auto s = made_up(0.1, 5.0, 0.5, 25.0);
  auto tips = train::advice(s, gpu);
  std::string all;
  for (auto& t : tips) all += t + "\n";
  EXPECT_TRUE(has(all, "GPU utilization averaged 25%")) << all;
  EXPECT_TRUE(has(all, "batch size (now 16")) << all;
  EXPECT_TRUE(has(all, "pin_memory")) << all;
  EXPECT_TRUE(has(all, "bf16")) << all;
  const std::string r = train::format_report(s, gpu);
  EXPECT_TRUE(has(r, "utilization 25% mean")) << r;
  EXPECT_TRUE(has(r, "waiting for the GPU")) << r;
  EXPECT_FALSE(has(r, "n/a (CPU")) << r;

  // A busy GPU in bf16 with workers and pinned memory: nothing to say.
  const train::MonitorContext tuned{.device = Device::cuda(0),
                                    .num_workers = 4,
                                    .pin_memory = true,
                                    .batch_size = 256,
                                    .precision = train::Precision::BF16};
  EXPECT_TRUE(train::advice(made_up(0.1, 5.0, 0.5, 95.0), tuned).empty());
}

TEST(Monitor, FormatsBytesAndDurations) {
  EXPECT_EQ(train::format_bytes(512), "512 B");
  EXPECT_EQ(train::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(train::format_bytes(3.0 * (1 << 30)), "3.0 GiB");
  EXPECT_EQ(train::format_duration(4.25), "4.2s");
  EXPECT_EQ(train::format_duration(125), "2:05");
  EXPECT_EQ(train::format_duration(3725), "1:02:05");
}

TEST(GpuSampler, SummarizesReadingsAndIsInertWithoutNvml) {
  train::GpuSampler sampler(nullptr, 0);
  EXPECT_FALSE(sampler.available());
  sampler.start();  // no thread without NVML
  sampler.stop();
  EXPECT_FALSE(sampler.latest().has_value());
  sampler.add({.utilization = 40, .memory_used = 100, .memory_total = 1000, .power_watts = 100});
  sampler.add({.utilization = 80, .memory_used = 300, .memory_total = 1000, .power_watts = 200});
  sampler.add({.utilization = 60, .memory_used = 200, .memory_total = 1000, .power_watts = -1});
  train::GpuSummary s = sampler.summary();
  EXPECT_EQ(s.samples, 3);
  EXPECT_DOUBLE_EQ(s.mean_utilization, 60);
  EXPECT_DOUBLE_EQ(s.max_utilization, 80);
  EXPECT_DOUBLE_EQ(s.max_memory_used, 300);
  EXPECT_DOUBLE_EQ(s.mean_power_watts, 150);  // the reading without power is left out
  EXPECT_DOUBLE_EQ(s.max_power_watts, 200);
}

TEST(GpuSampler, MapsCudaVisibleDevicesToNvmlIndices) {
  const char* old = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string saved = old ? old : "";
  setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
  EXPECT_EQ(train::nvml_index_for_cuda_device(0), 3);
  EXPECT_EQ(train::nvml_index_for_cuda_device(1), 1);
  setenv("CUDA_VISIBLE_DEVICES", "GPU-1234", 1);
  EXPECT_EQ(train::nvml_index_for_cuda_device(0), 0);
  if (old)
    setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else
    unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(train::nvml_index_for_cuda_device(2), old ? train::nvml_index_for_cuda_device(2) : 2);
}

// On a machine with a GPU driver this reads real numbers; elsewhere load()
// returns null (which is the point: absent NVML is not an error).
TEST(GpuSampler, NvmlLoadsOrIsAbsentWithoutError) {
  auto nvml = train::Nvml::load();
  if (!nvml) GTEST_SKIP() << "no libnvidia-ml.so.1 or no GPU: NVML readings are n/a here";
  ASSERT_GT(nvml->device_count(), 0);
  auto s = nvml->sample(0);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->memory_total, 0);
  EXPECT_GE(s->utilization, 0);
  EXPECT_LE(s->utilization, 100);
}

}  // namespace
}  // namespace anvil
