#pragma once
// Internal to the emulator: how a grid runs on a stream worker. One OS
// thread (the stream's worker) runs the blocks of a launch one after
// another; inside a block every CUDA thread is a fiber with its own stack.
// A fiber runs until it reaches __syncthreads, a warp operation or its end,
// then switches back to the scheduler, which resumes the next ready fiber.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cuda/emulator/device_builtins.h"
#include "kernels/cuda/emulator/launch.h"

namespace anvil::emulator {

// A kernel launch as the worker sees it.
struct Launch {
  const void* kernel = nullptr;
  dim3 grid, block;
  size_t shared_bytes = 0;
  int device = 0;
  uint64_t serial = 0;  // unique per launch: the global race checker's epoch
  std::unique_ptr<KernelBody> body;
};

enum class FiberState : uint8_t { NotStarted, Ready, Running, AtBarrier, AtWarp, Exited };

struct Fiber {
  uint3 tid{};
  unsigned linear = 0, lane = 0, warp = 0;
  void* sp = nullptr;
  char* stack = nullptr;
  FiberState state = FiberState::NotStarted;
  Site site{};
  uint64_t value = 0, result = 0;  // a warp operation's operand and result
  int arg = 0;
};

// Runs `launch` to completion on the calling thread (a stream worker).
// Synccheck findings abort the rest of the grid; the other checkers'
// findings are recorded as the accesses happen.
void run_grid(const Launch& launch);

// A warp instruction whose operands do not fit warp_op's 64 bits (the tensor
// cores' mma and ldmatrix, tensor_cores.cpp): every lane of the warp arrives
// with a pointer to its own operands (on its fiber's stack), with synccheck's
// checks as for a shuffle (all 32 lanes, one call site, `op` telling
// instructions apart); the last to arrive calls compute(lanes, arg), lanes[l]
// being lane l's pointer, which writes every lane's results through them.
using WarpCompute = void (*)(void* const* lanes, int arg);
void warp_collective(void* lane_data, WarpCompute compute, int op, int arg, Site s);

// The fiber running on this OS thread, or null on host code. Read on every
// memory access a kernel makes, so a plain TLS pointer (no wrapper call).
extern __thread Fiber* t_running_fiber;
inline Fiber* running_fiber() { return t_running_fiber; }
const Launch* running_launch();
uint64_t running_global_thread();  // block linear index * threads per block + thread

// Dynamic shared memory: one buffer per worker thread, the opt-in limit's
// size, in the executable's TLS block (so racecheck's shadow covers it).
// (Kernels reach it through dynamic_shared_memory(); the access hooks, which
// run on every access, read the TLS array directly.)
constexpr size_t kDynamicSharedCapacity = 227 * 1024;
extern __thread unsigned char t_dynamic_shared[kDynamicSharedCapacity];
unsigned char* dynamic_shared_memory();

// context_switch.cpp
void* prepare_fiber_stack(char* stack, size_t stack_bytes, void (*entry)(void*), void* arg);
void switch_stack(void** save_sp, void* to_sp);

}  // namespace anvil::emulator
