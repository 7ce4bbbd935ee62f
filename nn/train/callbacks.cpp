#include "nn/train/callbacks.h"

#include <cmath>

#include "core/base/error.h"
#include "nn/train/trainer.h"

namespace anvil::nn::train {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  ANVIL_CHECK(!options_.monitor.empty(), "EarlyStopping: monitor names no metric");
  ANVIL_CHECK(options_.patience >= 0, "EarlyStopping: patience must be >= 0, got ", options_.patience);
  ANVIL_CHECK(options_.min_delta >= 0, "EarlyStopping: min_delta must be >= 0, got ", options_.min_delta);
  best_ = options_.mode == MonitorMode::Min ? std::numeric_limits<double>::infinity()
                                            : -std::numeric_limits<double>::infinity();
}

void EarlyStopping::on_train_epoch_end(Trainer& trainer, Task&, const Metrics& metrics) {
  auto it = metrics.find(options_.monitor);
  if (it == metrics.end()) {
    std::string names;
    for (const auto& [k, v] : metrics) names += (names.empty() ? "" : ", ") + k;
    fail("EarlyStopping: monitored metric '", options_.monitor, "' is not among the epoch's metrics (", names,
         "); validation metrics need a validation loader");
  }
  const double v = it->second;
  const bool improved = std::isfinite(v) && (options_.mode == MonitorMode::Min ? v < best_ - options_.min_delta
                                                                               : v > best_ + options_.min_delta);
  if (improved) {
    best_ = v;
    wait_ = 0;
    return;
  }
  if (++wait_ >= options_.patience) {
    stopped_epoch_ = trainer.current_epoch();
    trainer.request_stop();
  }
}

Metrics EarlyStopping::state_dict() const {
  return {
      {"best", best_}, {"wait", static_cast<double>(wait_)}, {"stopped_epoch", static_cast<double>(stopped_epoch_)}};
}

void EarlyStopping::load_state_dict(const Metrics& state) {
  auto get = [&](const char* key) {
    auto it = state.find(key);
    ANVIL_CHECK(it != state.end(), "EarlyStopping::load_state_dict: missing '", key, "'");
    return it->second;
  };
  best_ = get("best");
  wait_ = static_cast<int64_t>(get("wait"));
  stopped_epoch_ = static_cast<int64_t>(get("stopped_epoch"));
}

}  // namespace anvil::nn::train
