// Shared-memory racecheck and initcheck (see shared_racecheck.h).
//
// Per byte of the worker's TLS block the checker keeps, for the current
// barrier epoch, the last writing thread and the reading thread(s). A write
// that follows another thread's read or write in the same epoch, or a read
// that follows another thread's write, is a hazard: on a GPU its outcome
// depends on warp scheduling. The epoch advances at every __syncthreads, so
// the fiber order the scheduler happens to pick does not matter: a missing
// barrier is found even when this run's order gave the right numbers.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/profiler.h"
#include "kernels/cuda/emulator/shared_racecheck.h"

namespace anvil::emulator {
std::string running_thread_text();  // scheduler.cpp

namespace {

// 32 bytes per shared byte: every kernel access walks these, so they are
// kept small. Epochs and serials wrap after 2^32 barriers or blocks on one
// worker; a stale cell then looks current only if it wrapped exactly.
struct Cell {
  uint32_t epoch = 0;  // barrier epoch of writer/reader below
  uint32_t written = 0;  // block serial of the last write (initcheck)
  int16_t writer = -1;  // thread of the last write in this epoch (< 1024)
  int16_t reader = -1;  // -1 none, -2 several threads
  bool write_atomic = false;
  const void* write_pc = nullptr;
  const void* read_pc = nullptr;
};
static_assert(sizeof(Cell) == 32);

struct SharedShadow {
  uintptr_t base = 0;
  size_t size = 0;
  std::vector<Cell> cells;
  uint32_t epoch = 1, block_serial = 0;
  bool in_block = false;
  bool races = false, inits = false;  // the checkers, read once per launch
};

thread_local char t_tls_probe;  // lives in the same TLS block as the kernels' __shared__ variables
thread_local SharedShadow* t_shadow = nullptr;

int find_main_tls(dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_tls_modid != 1) return 0;  // the executable, which links anvil_kernels statically
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS) *static_cast<size_t*>(out) = info->dlpi_phdr[i].p_memsz;
  return 1;
}

// The calling thread's copy of the executable's TLS block: {0, 0} when the
// kernels' __shared__ variables are not in it.
struct TlsWindow {
  uintptr_t base = 0;
  size_t size = 0;
};
const TlsWindow& tls_window() {
  thread_local const TlsWindow window = [] {
    void* self = dlopen(nullptr, RTLD_NOW);
    void* base = nullptr;
    size_t size = 0;
    if (self && dlinfo(self, RTLD_DI_TLS_DATA, &base) == 0 && base) dl_iterate_phdr(find_main_tls, &size);
    const auto probe = reinterpret_cast<uintptr_t>(&t_tls_probe);
    const auto lo = reinterpret_cast<uintptr_t>(base);
    if (size == 0 || probe < lo || probe >= lo + size) return TlsWindow{};
    return TlsWindow{lo, size};
  }();
  return window;
}

SharedShadow& shadow() {
  if (t_shadow) return *t_shadow;
  t_shadow = new SharedShadow();  // per worker thread, for the life of the process
  const TlsWindow& window = tls_window();
  if (window.size == 0) {
    std::fprintf(stderr,
                 "anvil emulator: racecheck is off: the kernels' __shared__ variables are not in the executable's "
                 "TLS block (was anvil built as a shared library?)\n");
    return *t_shadow;
  }
  t_shadow->base = window.base;
  t_shadow->size = window.size;
  t_shadow->cells.assign(window.size, Cell{});
  return *t_shadow;
}

enum Hazard { kReadAfterWrite, kWriteAfterRead, kWriteAfterWrite, kUninitializedRead };
const char* const kHazardName[] = {"read-after-write", "write-after-read", "write-after-write", "uninitialized read"};

void hazard(Hazard h, const void* first_pc, const void* pc, int first_thread, size_t offset) {
  const Checker c = h == kUninitializedRead ? Checker::Initcheck : Checker::Racecheck;
  record_once(c, h, pc, first_pc, [&] {
    std::string what = std::string("shared-memory ") + kHazardName[h] + " hazard: " + running_thread_text() +
                       ", shared byte " + std::to_string(offset);
    if (h == kUninitializedRead)
      what += ", which no thread of this block has written";
    else
      what += ", after thread " + std::to_string(first_thread) + " (linear index) with no __syncthreads between";
    return what;
  });
}

}  // namespace

bool in_shared_memory(const void* p) {
  const TlsWindow& window = tls_window();
  return reinterpret_cast<uintptr_t>(p) - window.base < window.size;
}

void racecheck_launch_begin() {
  const bool races = enabled(Checker::Racecheck), inits = enabled(Checker::Initcheck);
  if (!races && !inits) return;
  SharedShadow& s = shadow();
  s.races = races;
  s.inits = inits;
}
void racecheck_block_begin() {
  if (!t_shadow) return;
  ++t_shadow->block_serial;
  ++t_shadow->epoch;
  t_shadow->in_block = true;
}
void racecheck_barrier() {
  if (t_shadow) ++t_shadow->epoch;
}
void racecheck_launch_end() {
  if (t_shadow) t_shadow->in_block = false;
}

bool check_shared_access(const void* p, size_t n, bool write, bool atomic, const void* pc) {
  SharedShadow* s = t_shadow;
  if (!s || !s->in_block) return false;
  const uintptr_t offset = reinterpret_cast<uintptr_t>(p) - s->base;
  if (offset >= s->size) return false;
  const int t = static_cast<int>(running_fiber()->linear);
  const bool races = s->races;
  const size_t len = std::min(n, s->size - offset);
  Cell* const cells = s->cells.data() + offset;
  // initcheck: a read none of whose bytes were written. A struct copy also
  // reads the struct's padding, which nobody writes; its other bytes were.
  if (!write && s->inits) {
    bool any_written = false;
    for (size_t i = 0; i < len && !any_written; ++i) any_written = cells[i].written == s->block_serial;
    if (!any_written) {
      hazard(kUninitializedRead, nullptr, pc, -1, offset);
      for (size_t i = 0; i < len; ++i) cells[i].written = s->block_serial;  // once per byte and block
    }
  }
  for (size_t i = 0; i < len; ++i) {
    Cell& c = cells[i];
    if (c.epoch != s->epoch) {
      c.epoch = s->epoch;
      c.writer = -1;
      c.reader = -1;
    }
    const bool atomic_pair = atomic && c.write_atomic;
    if (write) {
      if (races && c.writer >= 0 && c.writer != t && !atomic_pair)
        hazard(kWriteAfterWrite, c.write_pc, pc, c.writer, offset + i);
      if (races && (c.reader == -2 || (c.reader >= 0 && c.reader != t)) && !atomic)
        hazard(kWriteAfterRead, c.read_pc, pc, c.reader, offset + i);
      c.writer = static_cast<int16_t>(t);
      c.write_pc = pc;
      c.write_atomic = atomic;
      c.written = s->block_serial;
    } else {
      if (races && c.writer >= 0 && c.writer != t && !atomic_pair)
        hazard(kReadAfterWrite, c.write_pc, pc, c.writer, offset + i);
      if (c.reader == -1) {
        c.reader = static_cast<int16_t>(t);
        c.read_pc = pc;
      } else if (c.reader != t) {
        c.reader = -2;
      }
    }
  }
  return true;
}

}  // namespace anvil::emulator
