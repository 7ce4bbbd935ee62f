// The emulated devices' memory and the global-memory checkers (device_memory.h).
#include "kernels/cuda/emulator/device_memory.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"

namespace anvil::emulator {
std::string running_thread_text();  // scheduler.cpp

namespace {

constexpr size_t kAlignment = 512;  // cudaMalloc gives 256; anvil's allocator assumes 512
constexpr size_t kRedZone = 512;  // unaddressable bytes after every allocation
constexpr size_t kQuarantine = size_t{64} << 20;  // freed bytes kept unaddressable before reuse

struct Allocation {
  size_t size = 0;
  bool live = true;
};

struct DeviceHeap {
  std::map<size_t, size_t> free_ranges;  // offset -> length, coalesced
  std::map<size_t, Allocation> allocations;  // offset -> allocation (live, or freed and remembered)
  std::deque<std::pair<size_t, size_t>> quarantine;
  size_t quarantined = 0;
  size_t in_use = 0;
};

struct Arena {
  char* base = nullptr;
  size_t per_device = 0;
  int devices = 0;
  uint8_t* state = nullptr;
  std::atomic<uint64_t>* writer = nullptr;
  std::vector<DeviceHeap> heaps;
  std::mutex mutex;
};

void* reserve(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "anvil emulator: cannot reserve %zu bytes of address space for the emulated GPUs\n", bytes);
    std::abort();
  }
  return p;
}

Arena& arena() {
  static Arena* a = [] {
    auto* x = new Arena();  // lives for the process: memory may be freed at exit by static tensors
    x->devices = config().devices;
    x->per_device = config().memory_bytes;
    const size_t total = x->per_device * static_cast<size_t>(std::max(1, x->devices));
    x->base = static_cast<char*>(reserve(total));
    x->state = static_cast<uint8_t*>(reserve(total));
    x->writer = static_cast<std::atomic<uint64_t>*>(reserve(total * sizeof(uint64_t)));
    x->heaps.resize(static_cast<size_t>(std::max(1, x->devices)));
    for (DeviceHeap& h : x->heaps) h.free_ranges[0] = x->per_device;
    return x;
  }();
  return *a;
}

size_t offset_of(const Arena& a, const void* p) { return static_cast<size_t>(static_cast<const char*>(p) - a.base); }

void release_range(DeviceHeap& h, size_t offset, size_t length) {
  auto next = h.free_ranges.lower_bound(offset);
  if (next != h.free_ranges.end() && offset + length == next->first) {
    length += next->second;
    next = h.free_ranges.erase(next);
  }
  if (next != h.free_ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += length;
      return;
    }
  }
  h.free_ranges[offset] = length;
}

void drop_pages(void* p, size_t n) {
  // Give the pages of a large freed range back to the OS (they read as zero again).
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + 4095) & ~uintptr_t(4095);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) & ~uintptr_t(4095);
  if (hi > lo + (1u << 20)) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

}  // namespace

void* device_malloc(int device, size_t nbytes) {
  Arena& a = arena();
  if (device < 0 || device >= a.devices) return nullptr;
  const size_t need = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment + kRedZone;
  std::lock_guard<std::mutex> lock(a.mutex);
  DeviceHeap& h = a.heaps[static_cast<size_t>(device)];
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (auto it = h.free_ranges.begin(); it != h.free_ranges.end(); ++it) {
      if (it->second < need) continue;
      const size_t local = it->first, rest = it->second - need;
      h.free_ranges.erase(it);
      if (rest) h.free_ranges[local + need] = rest;
      const size_t offset = static_cast<size_t>(device) * a.per_device + local;
      h.allocations[offset] = Allocation{nbytes, true};
      h.in_use += need;
      char* p = a.base + offset;
      std::memset(a.state + offset, kUninitialized, nbytes);
      std::memset(a.state + offset + nbytes, kUnaddressable, need - nbytes);
      return p;
    }
    // Out of memory: let the quarantine go before saying so.
    if (h.quarantine.empty()) break;
    while (!h.quarantine.empty()) {
      release_range(h, h.quarantine.front().first, h.quarantine.front().second);
      h.quarantine.pop_front();
    }
    h.quarantined = 0;
  }
  return nullptr;
}

bool device_free(const void* ptr) {
  Arena& a = arena();
  const int device = device_of(ptr);
  if (device < 0) return false;
  std::lock_guard<std::mutex> lock(a.mutex);
  DeviceHeap& h = a.heaps[static_cast<size_t>(device)];
  const size_t offset = offset_of(a, ptr);
  auto it = h.allocations.find(offset);
  if (it == h.allocations.end() || !it->second.live) return false;
  it->second.live = false;
  const size_t need = (std::max<size_t>(it->second.size, 1) + kAlignment - 1) / kAlignment * kAlignment + kRedZone;
  std::memset(a.state + offset, kUnaddressable, need);
  drop_pages(a.base + offset, need);
  drop_pages(a.writer + offset, need * sizeof(uint64_t));
  h.in_use -= need;
  // Freed memory stays unaddressable for a while, so a use after free is
  // reported instead of landing in a newer allocation.
  const size_t local = offset - static_cast<size_t>(device) * a.per_device;
  h.quarantine.emplace_back(local, need);
  h.quarantined += need;
  while (h.quarantined > kQuarantine) {
    auto [o, n] = h.quarantine.front();
    h.quarantine.pop_front();
    h.quarantined -= n;
    release_range(h, o, n);
    // Forget freed allocations that now lie in reusable memory.
    const size_t global = static_cast<size_t>(device) * a.per_device + o;
    h.allocations.erase(h.allocations.lower_bound(global), h.allocations.lower_bound(global + n));
  }
  return true;
}

size_t device_bytes_in_use(int device) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  return a.heaps[static_cast<size_t>(device)].in_use;
}

int device_of(const void* ptr) {
  Arena& a = arena();
  const auto p = reinterpret_cast<uintptr_t>(ptr), lo = reinterpret_cast<uintptr_t>(a.base);
  if (p < lo || p >= lo + a.per_device * static_cast<size_t>(a.devices)) return -1;
  return static_cast<int>((p - lo) / a.per_device);
}

const char* unusable_range(const void* ptr, size_t nbytes, std::string* detail) {
  Arena& a = arena();
  const size_t offset = offset_of(a, ptr);
  for (size_t i = 0; i < nbytes; ++i) {
    const uint8_t s = a.state[offset + i];
    if (s >= kUninitialized) continue;
    if (detail) *detail = describe_address(static_cast<const char*>(ptr) + i);
    return s == kCached ? "memory cached by the allocator but not handed out" : "unallocated or freed memory";
  }
  return nullptr;
}

void set_state(const void* ptr, size_t nbytes, MemoryState state) {
  Arena& a = arena();
  if (device_of(ptr) < 0 || nbytes == 0) return;
  std::memset(a.state + offset_of(a, ptr), state, nbytes);
}

void copy_state(void* dst, const void* src, size_t nbytes) {
  Arena& a = arena();
  std::memmove(a.state + offset_of(a, dst), a.state + offset_of(a, src), nbytes);
}

void poison(void* ptr, size_t nbytes) { std::memset(ptr, 0xFF, nbytes); }

std::string describe_address(const void* ptr) {
  Arena& a = arena();
  char buf[256];
  const int device = device_of(ptr);
  if (device < 0) {
    std::snprintf(buf, sizeof buf, "address %p (not device memory)", ptr);
    return buf;
  }
  const size_t offset = offset_of(a, ptr);
  std::lock_guard<std::mutex> lock(a.mutex);
  const DeviceHeap& h = a.heaps[static_cast<size_t>(device)];
  auto it = h.allocations.upper_bound(offset);
  if (it == h.allocations.begin()) {
    std::snprintf(buf, sizeof buf, "address %p on cuda:%d, before any allocation", ptr, device);
    return buf;
  }
  --it;
  const void* start = a.base + it->first;
  const size_t into = offset - it->first;
  const char* whose = it->second.live ? "" : "freed ";
  if (into < it->second.size) {
    std::snprintf(buf, sizeof buf, "address %p on cuda:%d, byte %zu of a %s%zu-byte allocation at %p", ptr, device,
                  into, whose, it->second.size, start);
  } else {
    std::snprintf(buf, sizeof buf, "address %p on cuda:%d, %zu bytes past the end of a %s%zu-byte allocation at %p",
                  ptr, device, into - it->second.size, whose, it->second.size, start);
  }
  return buf;
}

void check_global_access(const void* ptr, size_t nbytes, bool write, bool atomic, const void* pc) {
  Arena& a = arena();
  const int device = device_of(ptr);
  if (device < 0) return;  // the fiber's stack, kernel parameters, mapped pinned host memory
  const Launch* launch = running_launch();
  const size_t offset = offset_of(a, ptr);
  if (enabled(Checker::Memcheck) && device != launch->device &&
      !already_recorded(Checker::Memcheck, kOtherDevice, pc, nullptr))
    record(Checker::Memcheck, kOtherDevice, pc, nullptr,
           std::string(write ? "write to " : "read of ") + describe_address(ptr) + " by a kernel running on cuda:" +
               std::to_string(launch->device) + " (no peer access): " + running_thread_text());
  // initcheck: a read none of whose bytes were ever written (a struct copy
  // also reads padding nobody writes; its other bytes were).
  if (!write && enabled(Checker::Initcheck)) {
    bool any_written = false, all_addressable = true;
    for (size_t i = 0; i < nbytes; ++i) {
      any_written |= a.state[offset + i] == kInitialized;
      all_addressable &= a.state[offset + i] >= kUninitialized;
    }
    if (!any_written && all_addressable) {
      record_once(Checker::Initcheck, 0, pc, nullptr, [&] {
        return "read of uninitialized device memory at " + describe_address(ptr) + ": " + running_thread_text();
      });
      std::memset(a.state + offset, kInitialized, nbytes);  // report each byte once
    }
  }
  // A 16- or 8-bit atomic is a compare-and-swap on the aligned word around
  // it (indexing.cu's atomic_add): the word's other bytes may belong to a
  // neighbour, which is fine on a GPU. An atomic is wrong only when none of
  // its bytes is handed out.
  // The same holds for the plain read of that word which starts the loop: a
  // naturally aligned read of at most 4 bytes is wrong only when none of its
  // bytes is handed out (a wider access, a vector load, is checked per byte).
  const bool word_read = !write && nbytes <= 4 && (reinterpret_cast<uintptr_t>(ptr) & (nbytes - 1)) == 0;
  if (atomic || word_read) {
    bool any_live = false;
    for (size_t i = 0; i < nbytes && !any_live; ++i) any_live = a.state[offset + i] >= kUninitialized;
    if (any_live && word_read) return;
    if (any_live) {
      for (size_t i = 0; i < nbytes; ++i)
        if (a.state[offset + i] == kUninitialized) a.state[offset + i] = kInitialized;
      return;
    }
  }
  const uint64_t me =
      (launch->serial << 40) | (uint64_t(atomic) << 39) | (running_global_thread() & ((1ull << 39) - 1));
  for (size_t i = 0; i < nbytes; ++i) {
    uint8_t& s = a.state[offset + i];
    if (s < kUninitialized) {
      if (enabled(Checker::Memcheck)) {
        const bool cached = s == kCached;
        record_once(Checker::Memcheck, cached ? kNotHandedOut : kInvalidAccess, pc, nullptr, [&] {
          return std::string("invalid ") + (write ? "write" : "read") + " of " + std::to_string(nbytes) + " bytes at " +
                 describe_address(static_cast<const char*>(ptr) + i) +
                 (cached ? ": the caching allocator holds this memory but has not handed it out" : "") + ": " +
                 running_thread_text();
        });
      }
      return;
    }
    if (!write) continue;
    s = kInitialized;
    if (!enabled(Checker::Racecheck)) continue;
    const uint64_t before = a.writer[offset + i].exchange(me, std::memory_order_relaxed);
    const bool same_launch = (before >> 40) == launch->serial;
    const bool other_thread = (before & ((1ull << 39) - 1)) != (me & ((1ull << 39) - 1));
    const bool both_atomic = atomic && (before >> 39 & 1);
    if (same_launch && other_thread && !both_atomic) {
      record_once(Checker::Racecheck, 10, pc, nullptr, [&] {
        return "global-memory write-after-write hazard at " + describe_address(static_cast<const char*>(ptr) + i) +
               ": global thread " + std::to_string(before & ((1ull << 39) - 1)) +
               " wrote it earlier in this launch without atomics; now " + running_thread_text();
      });
      return;
    }
  }
}

}  // namespace anvil::emulator
