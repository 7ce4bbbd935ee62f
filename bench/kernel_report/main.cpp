// build-emulated/bin/kernel_report: every hand-written CUDA kernel family at
// a fixed shape on the emulated GPU, with its memory counters and a roofline
// estimate of its time on an H100. Built for a real GPU too, where it only
// runs the same launches, for Nsight Compute to count (scripts/gpu_check.sh ncu).
//
//   build-emulated/bin/kernel_report [--elements N] [--gemm N] [--copy-gbps G] [--out FILE.md]
//
// The estimate is max(bytes / copy bandwidth, flops / peak): bytes are the
// distinct 32-byte sectors the kernels touched (what DRAM must move if the
// caches keep every sector for the whole kernel), flops only for the GEMM
// rungs. It assumes perfect latency hiding and full occupancy, so it is a
// lower bound; the emulator cannot see caches, occupancy or instruction
// throughput (kernels/cuda/emulator/PROFILING.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "bench/kernel_report/kernel_families.h"

namespace {

using anvil::emulator::KernelProfile;
using anvil::emulator::MemoryCounters;

// Copy bandwidth measured by bench_kernels on an H100 80GB HBM3 on
// 2026-11-26 (best of cudaMemcpy and a float4 copy kernel over 256 MB, read +
// write; bench/results/2026-11-26-h100-first-run.md): the rate memory-bound
// kernels can reach, where the datasheet's 3.35 TB/s cannot be reached.
// --copy-gbps takes another machine's figure. FP32 peak: NVIDIA's H100 SXM5
// datasheet ("NVIDIA H100 Tensor Core GPU", 67 TFLOP/s non-tensor).
constexpr double kMeasuredH100CopyGBps = 2930;
constexpr double kFp32Tflops = 67;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "void anvil::cuda::(anonymous namespace)::softmax_rows<float, 4>(float const*, ...)"
// -> "softmax_rows<float, 4>": namespaces and parameters dropped, templates kept.
std::string short_kernel(std::string k) {
  for (const std::string noise : {"(anonymous namespace)::", "void "}) {
    for (size_t at; (at = k.find(noise)) != std::string::npos;) k.erase(at, noise.size());
  }
  int depth = 0;
  size_t name_start = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    const char c = k[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (depth == 0 && c == '(') {
      k.resize(i);
      break;
    }
    if (depth == 0 && c == ':' && i + 1 < k.size() && k[i + 1] == ':') name_start = i + 2;
  }
  k = k.substr(name_start);
  return k.size() > 60 ? k.substr(0, 57) + "..." : k;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"anvil kernel report: memory counters of every CUDA kernel family on the emulated GPU"};
  int64_t elements = int64_t{1} << 20, gemm = 256;
  double copy_gbps = kMeasuredH100CopyGBps;
  std::string out_path, commit = "unknown", sites_of;
  app.add_option("--elements", elements, "elements of each family's large tensors (a multiple of 4096)");
  app.add_option("--gemm", gemm, "M = N = K of the GEMM rungs (0: skip them)");
  app.add_option("--copy-gbps", copy_gbps,
                 "device copy bandwidth for the estimate (default: 2930, measured on an H100 80GB HBM3)");
  app.add_option("--out", out_path, "also write the table to this Markdown file");
  app.add_option("--commit", commit, "the commit the numbers belong to (written with them)");
  app.add_option("--sites", sites_of, "print the per-source-line counters of the families whose name contains this");
  CLI11_PARSE(app, argc, argv);
  if (elements <= 0 || elements % 4096 != 0) {
    std::cerr << "kernel_report: --elements must be a positive multiple of 4096, got " << elements << "\n";
    return 2;
  }

  std::ostringstream md;
  md << "| family | shape | dtype | kernel | launches | load sect/req | store sect/req | sector effic. | shared bank "
        "ways | lanes/req | compulsory MB | touched MB | traffic effic. | sectors MB | est. H100 us |\n"
     << "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const anvil::kernel_report::KernelFamily& family : anvil::kernel_report::kernel_families(elements, gemm)) {
    const std::vector<KernelProfile> launches = anvil::kernel_report::profile_family(family);
    double touched = 0, sectors = 0;
    for (const KernelProfile& p : launches) {
      touched += static_cast<double>(p.unique_bytes_read + p.unique_bytes_written);
      sectors += 32.0 * static_cast<double>(p.totals.sectors());
    }
    const double seconds =
        std::max(std::max(touched, family.compulsory_bytes) / (copy_gbps * 1e9), family.flops / (kFp32Tflops * 1e12));
#if ANVIL_CUDA_EMULATOR
    if (!sites_of.empty() && family.name.find(sites_of) != std::string::npos)
      std::cerr << "\n"
                << family.name << " " << family.shape << " " << family.dtype << ":\n"
                << anvil::emulator::format_profiles(launches, true);
#else
    std::cout << "ran " << family.name << " " << family.shape << " " << family.dtype << "\n";
    continue;  // a real GPU: run under ncu for the counters (scripts/gpu_check.sh ncu)
#endif
    if (launches.empty())
      md << "| " << family.name << " | " << family.shape << " | " << family.dtype
         << " | (no kernel: a copy-engine transfer) | 0 | | | | | | " << fixed(family.compulsory_bytes / 1e6, 2)
         << " | | | | " << fixed(family.compulsory_bytes / (copy_gbps * 1e9) * 1e6, 1) << " |\n";
    bool first = true;
    for (const KernelProfile& p : launches) {
      const MemoryCounters& c = p.totals;
      const double load = c.load_requests ? double(c.load_sectors) / double(c.load_requests) : 0;
      const double store = c.store_requests ? double(c.store_sectors) / double(c.store_requests) : 0;
      md << "| " << (first ? family.name : "") << " | " << (first ? family.shape : "") << " | "
         << (first ? family.dtype : "") << " | `" << short_kernel(p.kernel) << "` | 1 | " << fixed(load, 2) << " | "
         << fixed(store, 2) << " | " << fixed(100 * c.sector_efficiency(), 0) << "% | "
         << (c.shared_requests ? fixed(c.bank_conflict_ways(), 2) : "-") << " | " << fixed(c.lanes_per_request(), 1)
         << " | " << (first ? fixed(family.compulsory_bytes / 1e6, 2) : "") << " | "
         << (first ? fixed(touched / 1e6, 2) : "") << " | "
         << (first ? fixed(100 * family.compulsory_bytes / std::max(touched, 1.0), 0) + "%" : "") << " | "
         << (first ? fixed(sectors / 1e6, 2) : "") << " | " << (first ? fixed(seconds * 1e6, 1) : "") << " |\n";
      first = false;
    }
    std::cerr << "." << std::flush;
  }
  std::cerr << "\n";
  const std::string header =
      "Emulated-GPU memory counters per kernel (anvil kernel_report, commit " + commit + ", " +
      std::to_string(elements) + " elements, GEMM " + std::to_string(gemm) +
      "^3).\n"
      "Sectors are 32 bytes; a warp's coalesced float32 access costs 4 per request (16 for float4). "
      "Sector effic. = the fewest sectors the requested bytes fit in / sectors touched. Bank ways = shared-memory "
      "wavefronts per ideal wavefront (1 = no conflict). Touched = distinct sectors x 32 over the family's launches; "
      "traffic effic. = compulsory / touched. Sectors MB = every request's sectors x 32 (the traffic between the SMs "
      "and L2 if L1 kept nothing).\n"
      "**est. H100 us is an estimate, not a measurement**: max(max(touched, compulsory) / " +
      fixed(copy_gbps, 0) + " GB/s, flops / " + fixed(kFp32Tflops, 0) +
      " TFLOP/s FP32), the bandwidth a copy reached on an H100 "
      "80GB HBM3 (bench/results/2026-11-26-h100-first-run.md) unless --copy-gbps gave another, the peak from "
      "NVIDIA's H100 SXM datasheet; it assumes full occupancy and perfect latency hiding, and at 4 MB per tensor a "
      "real launch is mostly latency (3-18 us measured by Nsight Compute there).\n\n";
  std::cout << header << md.str();
  if (!out_path.empty()) {
    std::ofstream f(out_path);
    if (!f) {
      std::cerr << "kernel_report: cannot write " << out_path << "\n";
      return 1;
    }
    f << header << md.str();
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kernel_report: " << e.what() << "\n";
    return 1;
  }
}
