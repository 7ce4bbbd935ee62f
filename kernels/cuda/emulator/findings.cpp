// Configuration and the checkers' findings (findings.h).
#include "kernels/cuda/emulator/findings.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace anvil::emulator {
namespace {

size_t parse_bytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (end && *end ? *end : ' ') {
    case 'K':
    case 'k':
      v *= 1024.0;
      break;
    case 'M':
    case 'm':
      v *= 1024.0 * 1024;
      break;
    case 'G':
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
    default:
      break;
  }
  return static_cast<size_t>(v);
}

Config read_config() {
  Config c;
  if (const char* s = std::getenv("ANVIL_EMULATED_GPUS")) c.devices = std::max(0, std::min(8, std::atoi(s)));
  if (const char* s = std::getenv("ANVIL_EMULATED_GPU_MEMORY")) c.memory_bytes = parse_bytes(s);
  c.memory_bytes = std::max<size_t>(c.memory_bytes, size_t{1} << 20) & ~size_t{0xFFFF};
  if (const char* s = std::getenv("ANVIL_EMU_SCHEDULE")) {
    const std::string v = s;
    if (v == "reverse")
      c.order = Order::Reverse;
    else if (v == "lifo")
      c.order = Order::Lifo;
    else if (v.rfind("random", 0) == 0) {
      c.order = Order::Random;
      if (v.size() > 7) c.seed = std::strtoull(v.c_str() + 7, nullptr, 10);
    }
  }
  if (const char* s = std::getenv("ANVIL_EMU_STACK_KB")) c.stack_bytes = std::strtoull(s, nullptr, 10) * 1024;
  if (const char* s = std::getenv("ANVIL_EMU_ABORT")) c.abort_on_finding = std::atoi(s) != 0;
  if (const char* s = std::getenv("ANVIL_EMU_BLOCK_THREADS")) c.block_threads = std::max(1, std::min(64, std::atoi(s)));
  if (const char* s = std::getenv("ANVIL_EMU_CHECKS")) {
    const std::string v = s;
    if (v == "none")
      c.checks = 0;
    else if (v != "all") {
      c.checks = 0;
      for (int i = 0; i < 4; ++i)
        if (v.find(checker_name(static_cast<Checker>(i))) != std::string::npos) c.checks |= 1u << i;
    }
  }
  return c;
}

struct Key {
  Checker checker;
  int kind;
  const void* pc;
  const void* other_pc;
  bool operator<(const Key& o) const {
    return std::tie(checker, kind, pc, other_pc) < std::tie(o.checker, o.kind, o.pc, o.other_pc);
  }
};
struct Pending {
  std::string what;
  uint64_t count = 0;
};

}  // namespace

struct PendingFindings {
  std::map<Key, Pending> by_place;
};

namespace {

// This worker's findings for the launch it runs.
thread_local PendingFindings* t_pending = nullptr;

std::mutex g_mutex;
std::vector<Finding> g_findings;  // kept for take_findings()

void print_leftovers() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_findings.empty()) return;
  std::fprintf(stderr, "anvil emulator: %zu checker finding(s) were never taken by a test; failing the process\n",
               g_findings.size());
  std::fflush(stderr);
  _exit(3);
}

}  // namespace

const Config& config() {
  static const Config c = [] {
    std::atexit(print_leftovers);
    return read_config();
  }();
  return c;
}

const char* checker_name(Checker c) {
  switch (c) {
    case Checker::Memcheck:
      return "memcheck";
    case Checker::Racecheck:
      return "racecheck";
    case Checker::Synccheck:
      return "synccheck";
    case Checker::Initcheck:
      return "initcheck";
  }
  return "?";
}

bool already_recorded(Checker c, int kind, const void* pc, const void* other_pc) {
  return t_pending && t_pending->by_place.count(Key{c, kind, pc, other_pc});
}

void record(Checker c, int kind, const void* pc, const void* other_pc, const std::string& what) {
  if (!t_pending) t_pending = new PendingFindings();
  Pending& p = t_pending->by_place[Key{c, kind, pc, other_pc}];
  if (p.count++ == 0) p.what = what;
  if (config().abort_on_finding) {
    std::fprintf(stderr, "anvil emulator %s: %s at %s\n", checker_name(c), what.c_str(), symbolize(pc).c_str());
    std::abort();
  }
}

size_t flush_launch() {
  if (!t_pending || t_pending->by_place.empty()) return 0;
  std::vector<Finding> found;
  for (auto& [key, p] : t_pending->by_place) {
    std::string text = p.what;
    if (key.pc) text += "\n    at " + symbolize(key.pc);
    if (key.other_pc) text += "\n    conflicting access at " + symbolize(key.other_pc);
    if (p.count > 1) text += "\n    (" + std::to_string(p.count) + " times in this launch)";
    std::fprintf(stderr, "anvil emulator %s: %s\n", checker_name(key.checker), text.c_str());
    found.push_back(Finding{key.checker, std::move(text)});
  }
  t_pending->by_place.clear();
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Finding& f : found) g_findings.push_back(std::move(f));
  return found.size();
}

PendingFindings* take_pending() { return std::exchange(t_pending, nullptr); }

void merge_pending(PendingFindings* p) {
  if (!p) return;
  if (!t_pending) t_pending = new PendingFindings();
  for (auto& [key, found] : p->by_place) {
    Pending& mine = t_pending->by_place[key];
    if (mine.count == 0) mine.what = std::move(found.what);
    mine.count += found.count;
  }
  delete p;
}

std::vector<Finding> take_findings() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Finding> out;
  out.swap(g_findings);
  return out;
}

namespace {
// addr2line on the module holding `pc`: -f function, -i inline frames, -C demangle.
std::vector<std::string> addr2line(const void* pc, bool function_only) {
  Dl_info info{};
  std::vector<std::string> lines;
  if (!dladdr(pc, &info) || !info.dli_fname) return lines;
  // The executable's own dli_fname may be its argv[0]; /proc/self/exe is exact.
  std::string file = info.dli_fname;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0 && (file.empty() || file.find('/') == std::string::npos || info.dli_fbase == dlopen(nullptr, RTLD_NOW)))
    file.assign(exe, static_cast<size_t>(n));
  uintptr_t rel = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase);
  if (!function_only && rel > 0) rel -= 1;  // a return address: the call is the instruction before
  char cmd[4400];
  std::snprintf(cmd, sizeof cmd, "addr2line -C -f %s -e '%s' 0x%lx 2>/dev/null", function_only ? "" : "-i",
                file.c_str(), static_cast<unsigned long>(rel));
  if (FILE* f = popen(cmd, "r")) {
    char line[1024];
    while (std::fgets(line, sizeof line, f)) {
      std::string s = line;
      if (!s.empty() && s.back() == '\n') s.pop_back();
      lines.push_back(s);
    }
    pclose(f);
  }
  return lines;
}
}  // namespace

std::string symbolize(const void* pc) {
  const std::vector<std::string> lines = addr2line(pc, false);
  std::string out;
  // Pairs of function / file:line, innermost first; the file without its folders.
  for (size_t i = 0; i + 1 < lines.size() && i < 6; i += 2) {
    std::string fn = lines[i];
    if (fn.size() > 70) fn = fn.substr(0, 67) + "...";
    std::string loc = lines[i + 1];
    if (const size_t cut = loc.find(" (discriminator"); cut != std::string::npos) loc.resize(cut);
    out += (i ? "  <- " : "") + loc + " (" + fn + ")";
  }
  return out.empty() ? "an unknown instruction (build with -g for file:line)" : out;
}

std::string kernel_name(const void* kernel) {
  static std::mutex m;
  static std::map<const void*, std::string> names;
  std::lock_guard<std::mutex> lock(m);
  auto it = names.find(kernel);
  if (it != names.end()) return it->second;
  const std::vector<std::string> lines = addr2line(kernel, true);
  const std::string name = lines.empty() || lines[0] == "??" ? "(unknown kernel)" : lines[0];
  return names[kernel] = name;
}

}  // namespace anvil::emulator
