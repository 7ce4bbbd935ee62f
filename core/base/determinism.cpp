#include "core/base/determinism.h"

#include <atomic>

namespace anvil {
namespace {
std::atomic<bool> g_deterministic{false};  // a process-wide setting, read by kernels' hosts
}  // namespace

void use_deterministic_algorithms(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }
bool deterministic_algorithms_enabled() { return g_deterministic.load(std::memory_order_relaxed); }

}  // namespace anvil
