#pragma once
// Internal to the emulator: configuration and the checkers' findings.
// A checker calls record() at the faulty access; findings of one launch are
// merged by place (same checker, same instruction(s)) and counted, then
// flush_launch() symbolizes them (file:line through addr2line), prints them,
// keeps them for take_findings() and makes the launch fail.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/emulator/emulator.h"

namespace anvil::emulator {

enum class Order { Forward, Reverse, Random, Lifo };

struct Config {
  int devices = 2;
  size_t memory_bytes = size_t{4} << 30;
  Order order = Order::Forward;
  uint64_t seed = 1;
  size_t stack_bytes = 64 * 1024;
  unsigned checks = 0xF;  // bit per Checker
  bool abort_on_finding = false;
  int block_threads = 1;  // threads running one grid's blocks (ANVIL_EMU_BLOCK_THREADS)
};
const Config& config();
inline bool enabled(Checker c) { return config().checks >> static_cast<int>(c) & 1; }

// `what` describes the first occurrence (kernel, block, thread, address);
// `pc` and `other_pc` are the instructions involved (other_pc: the earlier
// conflicting access of a race), symbolized when the finding is printed.
void record(Checker c, int kind, const void* pc, const void* other_pc, const std::string& what);
// True when a finding with this key was already recorded in this launch
// (the caller can skip building its text).
bool already_recorded(Checker c, int kind, const void* pc, const void* other_pc);

// record(), calling describe() for the text only at the first finding with
// this key in the launch (later ones are only counted): the text names
// allocations and threads, too slow to build for every faulty access.
template <typename Describe>
void record_once(Checker c, int kind, const void* pc, const void* other_pc, Describe&& describe) {
  record(c, kind, pc, other_pc, already_recorded(c, kind, pc, other_pc) ? std::string() : describe());
}

// Memcheck's kinds of finding (record()'s `kind`): findings merge by kind and place.
enum MemcheckKind : int {
  kInvalidAccess = 0,  // unallocated, freed or red-zone memory
  kNotHandedOut = 1,  // cached by the caching allocator, not handed out
  kOtherDevice = 3,  // another device's memory (no peer access)
  kMisaligned = 4,  // an access its type promised aligned, at an unaligned address
  kPastDynamicShared = 5,  // dynamic shared memory past the launch's shared_bytes
  kUnusableCopy = 20,  // a copy or memset over unusable memory
};

// After a launch: returns the number of findings it had (0: clean).
size_t flush_launch();

// Findings a block-pool thread recorded while running blocks of a launch that
// a stream worker owns: take_pending() on the pool thread (null if none; the
// thread starts afresh), merge_pending() on the owner, which deletes them.
struct PendingFindings;
PendingFindings* take_pending();
void merge_pending(PendingFindings* p);

// "file:line (function)" for an instruction address, innermost inline frame first.
std::string symbolize(const void* pc);
std::string kernel_name(const void* kernel);

}  // namespace anvil::emulator
