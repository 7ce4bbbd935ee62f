#pragma once
/// @file
/// Whether ops record history. Thread-local, like PyTorch's grad mode.
namespace anvil::autograd {

/// This thread's grad mode: whether ops record history.
struct GradMode {
  static bool is_enabled();  ///< Whether grad mode is on in this thread.
  static void set_enabled(bool enabled);  ///< Turns grad mode on or off in this thread.
};

}  // namespace anvil::autograd

namespace anvil {

/// Disables history recording for its scope: anvil::NoGradGuard g;
class NoGradGuard {
 public:
  NoGradGuard() : prev_(autograd::GradMode::is_enabled()) { autograd::GradMode::set_enabled(false); }
  ~NoGradGuard() { autograd::GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Sets grad mode for its scope (on by default, as torch.enable_grad); restores it on exit.
class EnableGradGuard {
 public:
  /// Sets grad mode to `enabled` until the guard is destroyed.
  explicit EnableGradGuard(bool enabled = true) : prev_(autograd::GradMode::is_enabled()) {
    autograd::GradMode::set_enabled(enabled);
  }
  ~EnableGradGuard() { autograd::GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace anvil
