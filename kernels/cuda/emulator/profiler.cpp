// The emulated GPU's memory counters (profile.h): every access of a profiled
// block is recorded with the instruction (pc) that made it and how many times
// that thread had run the instruction before. When the block ends, the k-th
// execution of an instruction by each lane of a warp is one warp-wide request
// (as the GPU issues it), costed by transactions.cpp and added to the
// instruction's counters. When the launch ends, instructions are grouped by
// source line.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "kernels/cuda/emulator/device_memory.h"
#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/profile.h"
#include "kernels/cuda/emulator/profiler.h"
#include "kernels/cuda/emulator/transactions.h"

namespace anvil::emulator {

namespace {

enum AccessKind : uint8_t { kGlobalLoad, kGlobalStore, kShared, kAtomic };

struct Record {
  const void* pc;
  uint32_t occurrence;  // how many times this thread ran pc before
  uint8_t lane;
  uint8_t kind;
  uint16_t bytes;
  uintptr_t address;
};

// One launch being profiled; blocks may end on several threads (block pool).
struct LaunchState {
  std::mutex mutex;
  KernelProfile profile;
  std::unordered_map<const void*, MemoryCounters> by_pc;
  std::unordered_set<uintptr_t> read_sectors, written_sectors;
};

std::atomic<bool> g_on{false};
std::mutex g_mutex;
std::unordered_map<const Launch*, LaunchState*> g_running;
std::vector<KernelProfile> g_done;

}  // namespace

struct BlockRecorder {
  LaunchState* launch = nullptr;
  std::vector<std::vector<Record>> by_thread;
  // Per thread: instructions seen and their counts (a kernel has few
  // instructions that touch memory, so a short list searched from the last hit).
  std::vector<std::vector<std::pair<const void*, uint32_t>>> seen;
  uint64_t barriers = 0, warp_ops = 0;
};

__thread BlockRecorder* t_block_recorder = nullptr;

namespace {
thread_local BlockRecorder t_recorder_storage;

uint32_t next_occurrence(std::vector<std::pair<const void*, uint32_t>>& seen, const void* pc) {
  for (auto it = seen.rbegin(); it != seen.rend(); ++it)
    if (it->first == pc) return it->second++;
  seen.emplace_back(pc, 1);
  return 0;
}

// Costs one warp's records (sorted by instruction, kind, occurrence) into `by_pc` and the sector sets.
void cost_warp(std::vector<Record>& records, std::unordered_map<const void*, MemoryCounters>& by_pc,
               std::vector<uintptr_t>& read_sectors, std::vector<uintptr_t>& written_sectors) {
  std::sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    if (a.pc != b.pc) return a.pc < b.pc;
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.occurrence != b.occurrence) return a.occurrence < b.occurrence;
    return a.lane < b.lane;
  });
  std::vector<LaneAccess> lanes;
  for (size_t i = 0; i < records.size();) {
    const Record& first = records[i];
    lanes.clear();
    size_t j = i;
    for (; j < records.size() && records[j].pc == first.pc && records[j].kind == first.kind &&
           records[j].occurrence == first.occurrence;
         ++j) {
      const Record& r = records[j];
      lanes.push_back({r.lane, r.address, r.bytes});
      if (r.kind != kShared) {
        auto& sectors = r.kind == kGlobalLoad ? read_sectors : written_sectors;
        for (uintptr_t s = r.address / 32; s <= (r.address + r.bytes - 1) / 32; ++s) sectors.push_back(s);
      }
    }
    MemoryCounters& c = by_pc[first.pc];
    c.active_lanes += lanes.size();
    if (first.kind == kShared) {
      const BankCost cost = shared_request_cost(lanes);
      ++c.shared_requests;
      c.shared_wavefronts += cost.wavefronts;
      c.shared_ideal_wavefronts += cost.ideal_wavefronts;
    } else if (first.kind == kAtomic) {
      c.atomics += lanes.size();
    } else {
      const SectorCost cost = global_request_cost(lanes);
      if (first.kind == kGlobalLoad) {
        ++c.load_requests, c.load_sectors += cost.sectors, c.load_ideal_sectors += cost.ideal_sectors;
      } else {
        ++c.store_requests, c.store_sectors += cost.sectors, c.store_ideal_sectors += cost.ideal_sectors;
      }
    }
    i = j;
  }
}

// "file.cu:line (function)" of the innermost two inline frames, folders
// dropped: the line that made the access and the line that called it
// (loads often sit in small helpers).
std::string site_of(const void* pc) {
  static std::mutex m;
  static std::unordered_map<const void*, std::string> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(pc);
  if (it != cache.end()) return it->second;
  const std::string frames = symbolize(pc);
  std::string out;
  size_t at = 0;
  for (int frame = 0; frame < 2 && at < frames.size(); ++frame) {
    size_t end = frames.find(" <- ", at);
    if (end == std::string::npos) end = frames.size();
    std::string f = frames.substr(at, end - at);
    const size_t location_end = std::min(f.find(' '), f.size());
    const size_t slash = f.rfind('/', location_end);
    if (slash != std::string::npos) f.erase(0, slash + 1);
    out += (frame ? " <- " : "") + f;
    at = end + 4;
  }
  return cache[pc] = out;
}

void print_at_exit() {
  const char* where = std::getenv("ANVIL_EMU_PROFILE");
  const std::vector<KernelProfile> left = take_profiles();
  if (left.empty()) return;
  const std::string table = format_profiles(left, true);
  FILE* out = std::strcmp(where, "1") == 0 ? stderr : std::fopen(where, "w");
  if (!out) {
    std::fprintf(stderr, "anvil emulator: cannot write the profile to %s\n", where);
    out = stderr;
  }
  std::fputs(table.c_str(), out);
  if (out != stderr) std::fclose(out);
}

// ANVIL_EMU_PROFILE: profile from the start, print at exit.
[[maybe_unused]] const bool g_from_environment = [] {
  const char* s = std::getenv("ANVIL_EMU_PROFILE");
  if (!s || !*s || std::strcmp(s, "0") == 0) return false;
  g_on = true;
  std::atexit(print_at_exit);
  return true;
}();

}  // namespace

void set_profiling(bool on) { g_on = on; }
bool profiling_enabled() { return g_on; }

std::vector<KernelProfile> take_profiles() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<KernelProfile> out;
  out.swap(g_done);
  return out;
}

void profile_launch_begin(const Launch& launch) {
  if (!g_on) return;
  auto* state = new LaunchState();
  KernelProfile& p = state->profile;
  p.kernel = kernel_name(launch.kernel);
  p.grid[0] = launch.grid.x, p.grid[1] = launch.grid.y, p.grid[2] = launch.grid.z;
  p.block[0] = launch.block.x, p.block[1] = launch.block.y, p.block[2] = launch.block.z;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_running[&launch] = state;
}

void profile_launch_end(const Launch& launch) {
  LaunchState* state = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_running.find(&launch);
    if (it == g_running.end()) return;
    state = it->second;
    g_running.erase(it);
  }
  KernelProfile& p = state->profile;
  std::map<std::string, MemoryCounters> by_site;
  for (const auto& [pc, counters] : state->by_pc) {
    by_site[site_of(pc)] += counters;
    p.totals += counters;
  }
  for (auto& [site, counters] : by_site) p.sites.push_back({site, counters});
  std::sort(p.sites.begin(), p.sites.end(),
            [](const SiteCounters& a, const SiteCounters& b) { return a.counters.requests() > b.counters.requests(); });
  p.unique_bytes_read = 32 * state->read_sectors.size();
  p.unique_bytes_written = 32 * state->written_sectors.size();
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_done.push_back(std::move(p));
  }
  delete state;
}

void profile_block_begin(const Launch& launch, unsigned threads) {
  t_block_recorder = nullptr;
  if (!g_on) return;
  LaunchState* state = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_running.find(&launch);
    if (it != g_running.end()) state = it->second;
  }
  if (!state) return;  // profiling was turned on mid-launch
  BlockRecorder& r = t_recorder_storage;
  r.launch = state;
  r.by_thread.resize(threads);
  r.seen.resize(threads);
  for (unsigned t = 0; t < threads; ++t) {
    r.by_thread[t].clear();
    r.seen[t].clear();
  }
  r.barriers = r.warp_ops = 0;
  t_block_recorder = &r;
}

void profile_block_end() {
  BlockRecorder* r = t_block_recorder;
  if (!r) return;
  t_block_recorder = nullptr;
  std::unordered_map<const void*, MemoryCounters> by_pc;
  std::vector<uintptr_t> read_sectors, written_sectors;
  std::vector<Record> warp;
  for (size_t first = 0; first < r->by_thread.size(); first += 32) {
    warp.clear();
    for (size_t t = first; t < std::min(first + 32, r->by_thread.size()); ++t)
      warp.insert(warp.end(), r->by_thread[t].begin(), r->by_thread[t].end());
    cost_warp(warp, by_pc, read_sectors, written_sectors);
  }
  LaunchState& s = *r->launch;
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const auto& [pc, counters] : by_pc) s.by_pc[pc] += counters;
  s.read_sectors.insert(read_sectors.begin(), read_sectors.end());
  s.written_sectors.insert(written_sectors.begin(), written_sectors.end());
  s.profile.barriers += r->barriers;
  s.profile.warp_ops += r->warp_ops;
}

void profile_barrier(unsigned warps) {
  if (t_block_recorder) t_block_recorder->barriers += warps;
}
void profile_warp_op() {
  if (t_block_recorder) ++t_block_recorder->warp_ops;
}

void profile_access(const void* p, size_t n, bool write, bool atomic, const void* pc) {
  // Device memory and shared memory only: the fiber's stack and the kernel's
  // parameters are registers and the constant bank on a GPU.
  const bool shared = in_shared_memory(p);
  if (!shared && device_of(p) < 0) return;
  BlockRecorder& r = *t_block_recorder;
  const Fiber& f = *running_fiber();
  const uint8_t kind = shared ? kShared : atomic ? kAtomic : write ? kGlobalStore : kGlobalLoad;
  const auto address = reinterpret_cast<uintptr_t>(p);
  // The host compiler splits a float4 or float2 access into scalar ones that
  // follow each other; nvcc issues one vector access (LDG.128, LDS.64...).
  // So an access that continues this thread's previous one within an aligned
  // 16-byte chunk joins it.
  std::vector<Record>& mine = r.by_thread[f.linear];
  if (!mine.empty() && n < 16) {
    Record& last = mine.back();
    if (last.kind == kind && last.address + last.bytes == address && last.bytes + n <= 16 &&
        last.address / 16 == (address + n - 1) / 16) {
      last.bytes = static_cast<uint16_t>(last.bytes + n);
      return;
    }
  }
  const uint32_t occurrence = next_occurrence(r.seen[f.linear], pc);
  // A range access (a struct copy) wider than 16 bytes is served as 16-byte pieces.
  for (size_t at = 0; at < n; at += 16)
    mine.push_back({pc, occurrence, static_cast<uint8_t>(f.lane), kind,
                    static_cast<uint16_t>(std::min<size_t>(16, n - at)), address + at});
}

}  // namespace anvil::emulator
