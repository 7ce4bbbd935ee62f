#pragma once
// Internal to the emulator: helper threads that run blocks of a grid beside
// its stream worker (ANVIL_EMU_BLOCK_THREADS; see scheduler.cpp).
#include <functional>

namespace anvil::emulator {

// Calls `work` on the calling thread and on every pool thread that is free
// (config().block_threads - 1 of them, shared by all streams); returns once
// every call has returned. `work` must take its share of a common pool of
// tasks and return when none is left: a pool thread may join late, or not at
// all when other streams keep it busy.
void run_on_block_pool(const std::function<void()>& work);

}  // namespace anvil::emulator
