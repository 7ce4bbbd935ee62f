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
Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const { return anvil::clamp(*this, lo, hi); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return anvil::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return anvil::sub(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o) const { return anvil::add(*this, o); }
Tensor Tensor::sub(const Scalar& o) const { return anvil::sub(*this, o); }
Tensor Tensor::mul(const Tensor& o) const { return anvil::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return anvil::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return anvil::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return anvil::div(*this, o); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return anvil::masked_fill(*this, mask, value);
}
Tensor Tensor::sum() const { return anvil::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return anvil::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return anvil::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return anvil::mean(*this, dims, keepdim); }
Tensor Tensor::prod() const { return anvil::prod(*this); }
Tensor Tensor::prod(const Shape& dims, bool keepdim) const { return anvil::prod(*this, dims, keepdim); }
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return anvil::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(const Shape& dims, int64_t correction, bool keepdim) const {
  return anvil::std(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(double p, const Shape& dims, bool keepdim) const { return anvil::norm(*this, p, dims, keepdim); }
Tensor Tensor::max() const { return anvil::amax(*this); }
Tensor Tensor::min() const { return anvil::amin(*this); }
std::pair<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return anvil::max(*this, dim, keepdim); }
std::pair<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return anvil::min(*this, dim, keepdim); }
Tensor Tensor::argmax() const { return anvil::argmax(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return anvil::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin() const { return anvil::argmin(*this); }
Tensor Tensor::argmin(int64_t dim, bool keepdim) const { return anvil::argmin(*this, dim, keepdim); }
Tensor Tensor::softmax(int64_t dim) const { return anvil::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return anvil::log_softmax(*this, dim); }
Tensor Tensor::matmul(const Tensor& o) const { return anvil::matmul(*this, o); }

Tensor Tensor::log1p() const { return anvil::log1p(*this); }
Tensor Tensor::expm1() const { return anvil::expm1(*this); }
Tensor Tensor::erf() const { return anvil::erf(*this); }
Tensor Tensor::erfinv() const { return anvil::erfinv(*this); }
Tensor Tensor::atan() const { return anvil::atan(*this); }
Tensor Tensor::log2() const { return anvil::log2(*this); }
Tensor Tensor::floor() const { return anvil::floor(*this); }
Tensor Tensor::ceil() const { return anvil::ceil(*this); }
Tensor Tensor::round() const { return anvil::round(*this); }
Tensor Tensor::trunc() const { return anvil::trunc(*this); }
Tensor Tensor::isnan() const { return anvil::isnan(*this); }
Tensor Tensor::isinf() const { return anvil::isinf(*this); }
Tensor Tensor::isfinite() const { return anvil::isfinite(*this); }
Tensor Tensor::logical_not() const { return anvil::logical_not(*this); }
Tensor Tensor::bitwise_not() const { return anvil::bitwise_not(*this); }
Tensor Tensor::logical_and(const Tensor& o) const { return anvil::logical_and(*this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return anvil::logical_or(*this, o); }
Tensor Tensor::fmod(const Tensor& o) const { return anvil::fmod(*this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return anvil::fmod(*this, o); }
Tensor Tensor::remainder(const Tensor& o) const { return anvil::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return anvil::remainder(*this, o); }
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const { return anvil::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const { return anvil::cumprod(*this, dim, dtype); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return anvil::logcumsumexp(*this, dim); }
std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return anvil::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return anvil::argsort(*this, dim, descending, stable);
}
std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return anvil::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::all() const { return anvil::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return anvil::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return anvil::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return anvil::any(*this, dim, keepdim); }
Tensor Tensor::logsumexp(const Shape& dims, bool keepdim) const { return anvil::logsumexp(*this, dims, keepdim); }
Tensor Tensor::tril(int64_t diagonal) const { return anvil::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return anvil::triu(*this, diagonal); }

Tensor Tensor::repeat(const Shape& repeats) const { return anvil::repeat(*this, repeats); }
Tensor Tensor::flip(const Shape& dims) const { return anvil::flip(*this, dims); }
Tensor Tensor::roll(const Shape& shifts, const Shape& dims) const { return anvil::roll(*this, shifts, dims); }
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return anvil::unbind(*this, dim); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return anvil::add_(*this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return anvil::sub_(*this, o, alpha); }
Tensor& Tensor::mul_(const Tensor& o) { return anvil::mul_(*this, o); }
Tensor& Tensor::div_(const Tensor& o) { return anvil::div_(*this, o); }
Tensor& Tensor::add_(const Scalar& s) { return anvil::add_(*this, s); }
Tensor& Tensor::mul_(const Scalar& s) { return anvil::mul_(*this, s); }
Tensor& Tensor::div_(const Scalar& s) { return anvil::div_(*this, s); }
Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return anvil::addcmul_(*this, t1, t2, value);
}
Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return anvil::addcdiv_(*this, t1, t2, value);
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) { return anvil::lerp_(*this, end, weight); }
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) { return anvil::lerp_(*this, end, weight); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return anvil::masked_fill_(*this, mask, value);
}

Tensor& Tensor::relu_() {
  if (autograd::needs_grad({*this})) {
    autograd::rebase_history("relu_", *this, anvil::relu(*this));
    return *this;
  }
  autograd::check_inplace("relu_", *this);
  if (numel() > 0) detail::kernel_of<kernel::Unary> (*this)(UnaryOp::Relu, view_of(), view_of(), {});
  bump_version();
  return *this;
}

Tensor& Tensor::clamp_(std::optional<double> lo, std::optional<double> hi) {
  if (autograd::needs_grad({*this})) {
    autograd::rebase_history("clamp_", *this, anvil::clamp(*this, lo, hi));
    return *this;
  }
  autograd::check_inplace("clamp_", *this);
  const UnaryParams bounds = clamp_bounds("clamp_", lo, hi);
  if (numel() > 0) detail::kernel_of<kernel::Unary> (*this)(UnaryOp::Clamp, view_of(), view_of(), bounds);
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(const Scalar& v) {
  autograd::check_inplace("fill_", *this);
  if (numel() > 0) detail::kernel_of<kernel::Fill> (*this)(view_of(), v);
  bump_version();
  if (auto* m = autograd::meta_if(*this); m && m->grad_fn) {
    m->grad_fn = nullptr;  // a constant now: no history
    m->requires_grad = false;
  }
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace anvil
