#pragma once
// The emulated GPU's own API, beside the CUDA runtime it implements: its
// configuration, the checkers' findings, and the memory-state notes the
// caching allocator gives it. Host-side C++; includes no CUDA header, so
// tests and kernels/cuda/runtime/memory.cpp can include it in the emulated build.
//
// Environment (read once, at the first CUDA call):
//   ANVIL_EMULATED_GPUS=N          devices cuda:0..N-1 (default 2, at most 8)
//   ANVIL_EMULATED_GPU_MEMORY=4G   memory of each device (K, M, G suffixes)
//   ANVIL_EMU_SCHEDULE=forward|reverse|random:SEED|lifo   thread order in a block
//   ANVIL_EMU_CHECKS=all|none|memcheck,racecheck,synccheck,initcheck
//   ANVIL_EMU_ABORT=1              abort() at the first finding (for gdb)
//   ANVIL_EMU_STACK_KB=64          stack of each CUDA thread's fiber
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CUstream_st;  // cudaStream_t, without CUDA's headers

namespace anvil::emulator {

enum class Checker { Memcheck, Racecheck, Synccheck, Initcheck };
const char* checker_name(Checker c);

// One finding, with everything a reader needs to find the bug.
struct Finding {
  Checker checker;
  std::string text;  // kernel, block, thread, file:line, address and what was wrong
};

// The findings since the last call (and forgets them): tests of deliberately
// broken kernels take them; anything left when the process exits is printed
// and makes the exit status non-zero, so no finding goes unnoticed.
std::vector<Finding> take_findings();

// --- memory states, for the caching allocator (kernels/cuda/runtime/memory.cpp) ---
// A block the allocator keeps but has not handed out: touching it is a bug
// (memcheck) even though the device memory is live.
void note_cached(const void* ptr, size_t nbytes);
// A block handed out to a tensor: addressable, not yet initialised (initcheck).
void note_handed_out(const void* ptr, size_t nbytes);
// The same, in stream order (checked_allocator.h): handed out when `stream`
// reaches this point; cached when every one of `streams` has.
void note_handed_out_on(CUstream_st* stream, const void* ptr, size_t nbytes);
void note_cached_after(const std::vector<CUstream_st*>& streams, const void* ptr, size_t nbytes);
// Host code that wrote device memory directly (the CUB stand-in).
void note_initialized(const void* ptr, size_t nbytes);

// The device's memory size and count, as configured.
int device_count();
size_t device_memory_bytes();

}  // namespace anvil::emulator
