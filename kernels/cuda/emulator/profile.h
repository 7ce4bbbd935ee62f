#pragma once
// The emulated GPU's memory counters: what each warp-wide memory instruction
// of a kernel costs on an H100, from the addresses its lanes touched.
//
// A GPU serves a warp's global load or store in 32-byte sectors: 32 lanes
// reading consecutive floats (128 bytes) cost 4 sectors, the same lanes
// reading every other float cost 8, and the kernel is then twice as slow
// wherever memory bandwidth bounds it. Shared memory has 32 banks of 4 bytes;
// lanes reading different words of one bank are served one after another
// (an n-way bank conflict costs n "wavefronts" instead of one). The emulator
// sees every lane's address, so it counts both exactly (Nsight Compute's
// "sectors per request" and "shared bank conflicts"), on any machine.
//
// What it does not see: caches (a sector counted twice may hit L1/L2), how
// well the warps hide latency, occupancy, instruction throughput, tensor
// cores. The counters say how much memory traffic a kernel asks for, not how
// fast it runs (docs: kernels/cuda/emulator/PROFILING.md).
//
//   ANVIL_EMU_PROFILE=1       count every launch; print a table per kernel at exit (stderr)
//   ANVIL_EMU_PROFILE=FILE    the same table, written to FILE
//   set_profiling(true)       count from now on; take_profiles() hands them over
//
// Host-side C++ that includes no CUDA header.
#include <cstdint>
#include <string>
#include <vector>

namespace anvil::emulator {

// Counters of some memory instructions (one source line, or a whole launch).
// A "request" is one warp-wide execution of one instruction: the k-th time
// each lane of a warp ran it.
struct MemoryCounters {
  uint64_t load_requests = 0, load_sectors = 0, load_ideal_sectors = 0;
  uint64_t store_requests = 0, store_sectors = 0, store_ideal_sectors = 0;
  uint64_t shared_requests = 0, shared_wavefronts = 0, shared_ideal_wavefronts = 0;
  uint64_t atomics = 0;  // global-memory atomic operations, per lane (shared ones are shared requests)
  uint64_t active_lanes = 0;  // lanes taking part, summed over all requests (divergence)

  uint64_t requests() const { return load_requests + store_requests + shared_requests; }
  uint64_t global_requests() const { return load_requests + store_requests; }
  uint64_t sectors() const { return load_sectors + store_sectors; }
  uint64_t ideal_sectors() const { return load_ideal_sectors + store_ideal_sectors; }
  // Sectors per global request (4 for a warp's coalesced float access).
  double sectors_per_request() const { return ratio(sectors(), global_requests()); }
  // Ideal sectors / sectors: 1 when every request touches only the sectors
  // its bytes need (the bytes asked for, packed and aligned), 0.5 at stride 2.
  double sector_efficiency() const { return sectors() ? ratio(ideal_sectors(), sectors()) : 1; }
  // Wavefronts per ideal wavefront: 1 conflict-free, n for n-way conflicts.
  double bank_conflict_ways() const { return shared_requests ? ratio(shared_wavefronts, shared_ideal_wavefronts) : 1; }
  double lanes_per_request() const { return ratio(active_lanes, requests()); }  // 32: no divergence
  MemoryCounters& operator+=(const MemoryCounters& o) {
    load_requests += o.load_requests, load_sectors += o.load_sectors, load_ideal_sectors += o.load_ideal_sectors;
    store_requests += o.store_requests, store_sectors += o.store_sectors;
    store_ideal_sectors += o.store_ideal_sectors;
    shared_requests += o.shared_requests, shared_wavefronts += o.shared_wavefronts;
    shared_ideal_wavefronts += o.shared_ideal_wavefronts;
    atomics += o.atomics, active_lanes += o.active_lanes;
    return *this;
  }

 private:
  static double ratio(uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0; }
};

struct SiteCounters {
  std::string location;  // "file.cu:123 (function)", innermost inline frame first
  MemoryCounters counters;
};

// One kernel launch.
struct KernelProfile {
  std::string kernel;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  MemoryCounters totals;
  uint64_t barriers = 0;  // __syncthreads executed, per warp
  uint64_t warp_ops = 0;  // shuffles, votes and __syncwarp, per warp
  uint64_t unique_bytes_read = 0, unique_bytes_written = 0;  // distinct 32-byte sectors x 32 (DRAM traffic
                                                             // if every sector crossed it exactly once)
  std::vector<SiteCounters> sites;  // by source line, most global requests first
};

void set_profiling(bool on);
bool profiling_enabled();
// The launches completed since the last call, in the order they finished.
// Wait for them first (synchronize the device or stream).
std::vector<KernelProfile> take_profiles();

// A table of `profiles`, one row per kernel (launches of one kernel summed),
// with the sites under each when `with_sites`.
std::string format_profiles(const std::vector<KernelProfile>& profiles, bool with_sites);

}  // namespace anvil::emulator
