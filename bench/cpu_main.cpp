// main() of build/bin/bench_cpu and bench_train: Google Benchmark's, plus
// what the CPU backend runs on (anvil::cpu_capability()) in the context that
// heads every report, so a figure always travels with the CPU model and the
// GEMM and conv kernels that produced it.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "kernels/cpu_info.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const anvil::CpuCapability cpu = anvil::cpu_capability();
  benchmark::AddCustomContext("cpu_model", cpu.cpu_model);
  benchmark::AddCustomContext("cpu_isa", cpu.isa);
  benchmark::AddCustomContext("float32_gemm", cpu.float32_gemm.library + " " + cpu.float32_gemm.kernel);
  benchmark::AddCustomContext("float64_gemm", cpu.float64_gemm.library + " " + cpu.float64_gemm.kernel);
  benchmark::AddCustomContext("conv2d", cpu.conv2d);
  benchmark::AddCustomContext("vector_math", cpu.vector_math);
  // On stderr: stdout may be --benchmark_format=json.
  std::fprintf(stderr, "anvil CPU: %s\n", anvil::to_string(cpu).c_str());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
