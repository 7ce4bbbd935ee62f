#include "core/autocast.h"

#include "core/base/error.h"

namespace anvil {

namespace {
// Per thread, as PyTorch's: a data-loader or rank thread has its own.
thread_local autocast::State current;
}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled)
    : previous_enabled_(current.enabled), previous_dtype_(current.dtype) {
  ANVIL_CHECK(!enabled || dtype == kBFloat16 || dtype == kFloat16,
              "AutocastGuard: the low-precision dtype must be bfloat16 or float16, got ", dtype);
  current.enabled = enabled;
  if (enabled) current.dtype = dtype;
}

AutocastGuard::~AutocastGuard() {
  current.enabled = previous_enabled_;
  current.dtype = previous_dtype_;
}

namespace autocast {

bool is_enabled() { return current.enabled; }
DType dtype() { return current.dtype; }
State state() { return current; }
void set_state(State s) { current = s; }

Tensor lower_precision(const Tensor& t) {
  if (!current.enabled || !t.defined() || t.dtype() == current.dtype) return t;
  const DType d = t.dtype();
  if (d != kFloat32 && d != kFloat16 && d != kBFloat16) return t;
  return t.to(current.dtype);
}

Tensor full_precision(const Tensor& t) {
  if (!current.enabled || !t.defined()) return t;
  return t.dtype() == kFloat16 || t.dtype() == kBFloat16 ? t.to(kFloat32) : t;
}

}  // namespace autocast
}  // namespace anvil
