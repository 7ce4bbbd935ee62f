#pragma once
/// @file
/// Anomaly detection (PyTorch's torch.autograd.set_detect_anomaly): while on,
/// backward checks every gradient each node's backward returns and fails at the
/// first NaN or inf, naming the node (the forward op that created it) and its
/// creation number, instead of letting NaN spread silently into every weight.
/// Costs one reduction per gradient, so it is for debugging, off by default.
///
///     anvil::autograd::set_detect_anomaly(true);          // process-wide
///     { anvil::autograd::DetectAnomalyGuard guard; ... }  // for a scope
namespace anvil::autograd {

void set_detect_anomaly(bool enabled);  ///< Turns anomaly detection on or off, process-wide.
bool is_anomaly_enabled();  ///< Whether anomaly detection is on.

/// Anomaly detection on (or off) for a scope; restores the previous setting on exit.
class DetectAnomalyGuard {
 public:
  /// Sets anomaly detection to `enabled` until the guard is destroyed.
  explicit DetectAnomalyGuard(bool enabled = true) : prev_(is_anomaly_enabled()) { set_detect_anomaly(enabled); }
  ~DetectAnomalyGuard() { set_detect_anomaly(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace anvil::autograd
