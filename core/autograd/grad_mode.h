#pragma once
/// @file
/// Whether ops record history. Thread-local, like PyTorch's grad mode.
namespace anvil::autograd {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
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

class EnableGradGuard {
 public:
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
