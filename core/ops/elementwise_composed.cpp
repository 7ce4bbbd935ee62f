// Elementwise ops written with the others (no kernel of their own; the
// gradient comes from the ops they are made of): add/sub with alpha,
// addcmul, addcdiv and lerp, and their in-place forms (which store through
// add_, with its dtype and autograd rules).
#include "core/autograd/function.h"
#include "core/ops/elementwise.h"

namespace anvil {

namespace {

// alpha * t, skipping the multiply when alpha is 1 (the common case).
Tensor scaled(const Tensor& t, const Scalar& alpha) {
  const bool one = alpha.is_floating() ? alpha.to_double() == 1.0 : alpha.to_int() == 1;
  return one ? t : mul(t, alpha);
}

// self += step, refusing a leaf that requires grad under this op's own name
// (add_ would refuse it too, but a user of addcmul_ should read addcmul_).
Tensor& add_step(const char* name, Tensor& self, const Tensor& step) {
  autograd::check_inplace(name, self);
  return add_(self, step);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return add(a, scaled(b, alpha)); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub(a, scaled(b, alpha)); }

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return add(self, scaled(t1 * t2, value));
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return add(self, scaled(t1 / t2, value));
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) { return add(self, (end - self) * weight); }
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) { return add(self, (end - self) * weight); }

Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) { return add_(self, scaled(other, alpha)); }
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) { return sub_(self, scaled(other, alpha)); }
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return add_step("addcmul_", self, scaled(t1 * t2, value));
}
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return add_step("addcdiv_", self, scaled(t1 / t2, value));
}
// The step is computed before self changes, so reading self is safe.
Tensor& lerp_(Tensor& self, const Tensor& end, const Scalar& weight) {
  return add_step("lerp_", self, (end - self) * weight);
}
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& weight) {
  return add_step("lerp_", self, (end - self) * weight);
}

}  // namespace anvil
