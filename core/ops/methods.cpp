// Tensor's op methods: thin forwards to the free functions, plus fill_/zero_.
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace anvil {

Tensor Tensor::neg() const { return anvil::neg(*this); }
Tensor Tensor::abs() const { return anvil::abs(*this); }
Tensor Tensor::exp() const { return anvil::exp(*this); }
Tensor Tensor::log() const { return anvil::log(*this); }
Tensor Tensor::sqrt() const { return anvil::sqrt(*this); }
Tensor Tensor::rsqrt() const { return anvil::rsqrt(*this); }
Tensor Tensor::sin() const { return anvil::sin(*this); }
Tensor Tensor::cos() const { return anvil::cos(*this); }
Tensor Tensor::tanh() const { return anvil::tanh(*this); }
Tensor Tensor::sigmoid() const { return anvil::sigmoid(*this); }
Tensor Tensor::relu() const { return anvil::relu(*this); }
Tensor Tensor::square() const { return anvil::square(*this); }
Tensor Tensor::pow(const Scalar& e) const { return anvil::pow(*this, e); }
Tensor Tensor::clamp(double lo, double hi) const { return anvil::clamp(*this, lo, hi); }
Tensor Tensor::sum() const { return anvil::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return anvil::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return anvil::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return anvil::mean(*this, dims, keepdim); }
Tensor Tensor::max() const { return anvil::amax(*this); }
Tensor Tensor::min() const { return anvil::amin(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return anvil::argmax(*this, dim, keepdim); }
Tensor Tensor::softmax(int64_t dim) const { return anvil::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return anvil::log_softmax(*this, dim); }
Tensor Tensor::matmul(const Tensor& o) const { return anvil::matmul(*this, o); }

Tensor& Tensor::add_(const Tensor& o) { return anvil::add_(*this, o); }
Tensor& Tensor::sub_(const Tensor& o) { return anvil::sub_(*this, o); }
Tensor& Tensor::mul_(const Tensor& o) { return anvil::mul_(*this, o); }
Tensor& Tensor::div_(const Tensor& o) { return anvil::div_(*this, o); }
Tensor& Tensor::add_(const Scalar& s) { return anvil::add_(*this, s); }
Tensor& Tensor::mul_(const Scalar& s) { return anvil::mul_(*this, s); }
Tensor& Tensor::div_(const Scalar& s) { return anvil::div_(*this, s); }

Tensor& Tensor::relu_() {
  if (autograd::needs_grad({*this})) {
    autograd::rebase_history("relu_", *this, anvil::relu(*this));
    return *this;
  }
  autograd::check_inplace("relu_", *this);
  if (numel() > 0) detail::backend_of(*this).unary(UnaryOp::Relu, view_of(), view_of(), {});
  bump_version();
  return *this;
}

Tensor& Tensor::clamp_(double lo, double hi) {
  if (autograd::needs_grad({*this})) {
    autograd::rebase_history("clamp_", *this, anvil::clamp(*this, lo, hi));
    return *this;
  }
  autograd::check_inplace("clamp_", *this);
  if (numel() > 0) detail::backend_of(*this).unary(UnaryOp::Clamp, view_of(), view_of(), UnaryParams{lo, hi});
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(const Scalar& v) {
  autograd::check_inplace("fill_", *this);
  if (numel() > 0) detail::backend_of(*this).fill(view_of(), v);
  bump_version();
  if (auto* m = autograd::meta_if(*this); m && m->grad_fn) {
    m->grad_fn = nullptr;  // a constant now: no history
    m->requires_grad = false;
  }
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace anvil
