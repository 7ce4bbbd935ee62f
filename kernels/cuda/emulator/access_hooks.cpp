// Every memory access of a kernel reaches the checkers through GCC's
// ThreadSanitizer instrumentation: the emulated build compiles the .cu files
// with -fsanitize=thread (but never links libtsan), so the compiler calls
// __tsan_readN / __tsan_writeN / __tsan_atomicN_* before each load, store and
// atomic. They are defined here: shared memory goes to the shared-memory
// racecheck, device memory to memcheck, initcheck and the global race check.
// Host code in the same files calls them too; off a fiber they return at once.
//
// GCC calls __tsan_readN (not __tsan_unaligned_readN) when the type promises
// N-byte alignment, as a float4 or double does; nvcc then emits one N-byte
// (vector) load, which a GPU faults on unless the address is N-aligned
// (cudaErrorMisalignedAddress). x86 would load it anyway, so memcheck checks.
#include <cstdint>
#include <string>

#include "kernels/cuda/emulator/device_memory.h"
#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/profiler.h"
#include "kernels/cuda/emulator/shared_racecheck.h"

namespace anvil::emulator {
std::string running_thread_text();  // scheduler.cpp

namespace {
void misaligned(const void* p, size_t n, bool write, const void* pc) {
  if (!enabled(Checker::Memcheck)) return;
  record_once(Checker::Memcheck, kMisaligned, pc, nullptr, [&] {
    const std::string size = std::to_string(n);
    return "misaligned " + size + "-byte " + (write ? "write" : "read") + " at " + describe_address(p) +
           " (the type promises " + size +
           "-byte alignment; a GPU faults: misaligned address): " + running_thread_text();
  });
}

// Dynamic shared memory past the launch's shared_bytes: the buffer behind it
// is larger (the opt-in limit), so only this check sees the overrun.
void past_dynamic_shared(const void* p, size_t n, bool write, const void* pc) {
  if (!enabled(Checker::Memcheck)) return;
  record_once(Checker::Memcheck, kPastDynamicShared, pc, nullptr, [&] {
    const size_t offset = static_cast<size_t>(static_cast<const unsigned char*>(p) - t_dynamic_shared);
    return std::string("invalid shared-memory ") + (write ? "write" : "read") + " of " + std::to_string(n) +
           " bytes at byte " + std::to_string(offset) + " of dynamic shared memory, past the launch's " +
           std::to_string(running_launch()->shared_bytes) + " bytes: " + running_thread_text();
  });
}

inline void on_access(const void* p, size_t n, bool write, bool atomic, const void* pc) {
  if (!running_fiber()) return;
  const auto* byte = static_cast<const unsigned char*>(p);
  const unsigned char* dynamic = t_dynamic_shared;
  if (byte >= dynamic &&
      byte<dynamic + kDynamicSharedCapacity&& static_cast<size_t>(byte - dynamic) + n> running_launch()->shared_bytes)
    past_dynamic_shared(p, n, write, pc);
  if (t_block_recorder) profile_access(p, n, write, atomic, pc);
  if (check_shared_access(p, n, write, atomic, pc)) return;
  check_global_access(p, n, write, atomic, pc);
}

// An access the compiler emitted as naturally aligned (n is a power of two).
inline void on_aligned_access(const void* p, size_t n, bool write, bool atomic, const void* pc) {
  if (!running_fiber()) return;
  if (reinterpret_cast<uintptr_t>(p) & (n - 1)) misaligned(p, n, write, pc);
  on_access(p, n, write, atomic, pc);
}
}  // namespace
}  // namespace anvil::emulator

#define ANVIL_EMU_PC __builtin_return_address(0)
using anvil::emulator::on_access;
using anvil::emulator::on_aligned_access;

extern "C" {
void __tsan_init(void) {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define ANVIL_EMU_RW(N) \
  void __tsan_read##N(void* p) { on_aligned_access(p, N, false, false, ANVIL_EMU_PC); } \
  void __tsan_write##N(void* p) { on_aligned_access(p, N, true, false, ANVIL_EMU_PC); } \
  void __tsan_unaligned_read##N(void* p) { on_access(p, N, false, false, ANVIL_EMU_PC); } \
  void __tsan_unaligned_write##N(void* p) { on_access(p, N, true, false, ANVIL_EMU_PC); } \
  void __tsan_volatile_read##N(void* p) { on_access(p, N, false, false, ANVIL_EMU_PC); } \
  void __tsan_volatile_write##N(void* p) { on_access(p, N, true, false, ANVIL_EMU_PC); } \
  void __tsan_read##N##_pc(void* p, void* pc) { on_aligned_access(p, N, false, false, pc); } \
  void __tsan_write##N##_pc(void* p, void* pc) { on_aligned_access(p, N, true, false, pc); }
ANVIL_EMU_RW(1)
ANVIL_EMU_RW(2)
ANVIL_EMU_RW(4)
ANVIL_EMU_RW(8)
ANVIL_EMU_RW(16)
#undef ANVIL_EMU_RW
void __tsan_read_range(void* p, unsigned long n) { on_access(p, n, false, false, ANVIL_EMU_PC); }
void __tsan_write_range(void* p, unsigned long n) { on_access(p, n, true, false, ANVIL_EMU_PC); }

// Atomics: the access is recorded as atomic, then done for real.
#define ANVIL_EMU_ATOMIC(N, T) \
  T __tsan_atomic##N##_load(const volatile T* a, int) { \
    on_access((const void*)a, N / 8, false, true, ANVIL_EMU_PC); \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST); \
  } \
  void __tsan_atomic##N##_store(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_exchange(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); \
  } \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  } \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  } \
  T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) { \
    on_access((const void*)a, N / 8, true, true, ANVIL_EMU_PC); \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return c; \
  }
ANVIL_EMU_ATOMIC(8, uint8_t)
ANVIL_EMU_ATOMIC(16, uint16_t)
ANVIL_EMU_ATOMIC(32, uint32_t)
ANVIL_EMU_ATOMIC(64, uint64_t)
#undef ANVIL_EMU_ATOMIC
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) {}
}  // extern "C"
