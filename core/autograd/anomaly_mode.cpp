#include "core/autograd/anomaly_mode.h"

#include <atomic>

namespace anvil::autograd {

namespace {
// Process-wide, like PyTorch's: backward may run on other threads (DDP hooks).
std::atomic<bool> anomaly_enabled{false};
}  // namespace

void set_detect_anomaly(bool enabled) { anomaly_enabled.store(enabled); }
bool is_anomaly_enabled() { return anomaly_enabled.load(); }

}  // namespace anvil::autograd
