// format_profiles (profile.h): the counters as a table a reader can scan,
// one row per kernel, its source lines under it.
#include <cstdio>
#include <map>
#include <string>

#include "kernels/cuda/emulator/profile.h"

namespace anvil::emulator {
namespace {

std::string row(const char* name_format, const std::string& name, uint64_t launches, const MemoryCounters& c,
                const char* tail) {
  char buf[512];
  std::snprintf(buf, sizeof buf, name_format, name.c_str());
  std::string out = buf;
  std::snprintf(buf, sizeof buf, " %8llu %10llu %6.2f %10llu %6.2f %6.0f%% %10llu %6.2f %9llu %6.1f%s\n",
                static_cast<unsigned long long>(launches), static_cast<unsigned long long>(c.load_requests),
                c.load_requests ? static_cast<double>(c.load_sectors) / static_cast<double>(c.load_requests) : 0.0,
                static_cast<unsigned long long>(c.store_requests),
                c.store_requests ? static_cast<double>(c.store_sectors) / static_cast<double>(c.store_requests) : 0.0,
                100 * c.sector_efficiency(), static_cast<unsigned long long>(c.shared_requests), c.bank_conflict_ways(),
                static_cast<unsigned long long>(c.atomics), c.lanes_per_request(), tail);
  return out + buf;
}

}  // namespace

std::string format_profiles(const std::vector<KernelProfile>& profiles, bool with_sites) {
  struct Kernel {
    uint64_t launches = 0, barriers = 0, read = 0, written = 0;
    MemoryCounters totals;
    std::map<std::string, MemoryCounters> sites;
  };
  std::vector<std::string> order;
  std::map<std::string, Kernel> kernels;
  for (const KernelProfile& p : profiles) {
    auto [it, fresh] = kernels.try_emplace(p.kernel);
    if (fresh) order.push_back(p.kernel);
    Kernel& k = it->second;
    ++k.launches;
    k.barriers += p.barriers;
    k.read += p.unique_bytes_read;
    k.written += p.unique_bytes_written;
    k.totals += p.totals;
    for (const SiteCounters& s : p.sites) k.sites[s.location] += s.counters;
  }
  std::string out =
      "emulated GPU memory counters (per warp-wide request; sectors of 32 bytes; efficiency = ideal sectors / "
      "sectors;\nbank ways = shared wavefronts per ideal wavefront; lanes = active lanes per request)\n";
  char head[256];
  std::snprintf(head, sizeof head, "%-60s %8s %10s %6s %10s %6s %7s %10s %6s %9s %6s\n", "kernel / source line",
                "launches", "loads", "sect/r", "stores", "sect/r", "effic.", "shared", "ways", "atomics", "lanes");
  out += head;
  for (const std::string& name : order) {
    const Kernel& k = kernels[name];
    std::string shown = name.size() > 60 ? name.substr(0, 57) + "..." : name;
    char tail[128];
    std::snprintf(tail, sizeof tail, "   touched %.2f MB read, %.2f MB written", k.read / 1e6, k.written / 1e6);
    out += row("%-60s", shown, k.launches, k.totals, tail);
    if (!with_sites) continue;
    for (const auto& [site, counters] : k.sites) {
      std::string s = "  " + (site.size() > 58 ? site.substr(0, 55) + "..." : site);
      out += row("%-60s", s, k.launches, counters, "");
    }
  }
  return out;
}

}  // namespace anvil::emulator
