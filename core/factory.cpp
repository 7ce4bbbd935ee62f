#include "core/factory.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/autograd/node.h"
#include "core/dispatch.h"
#include "core/ops/shape.h"
#include "core/random.h"

namespace anvil {

namespace {

Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}

// Sizes must be non-negative, the strides of a contiguous tensor (products
// of the sizes, an empty dim counting as one) must fit in int64, and so must
// the bytes of a non-empty one: a shape read from a file may be anything.
void check_shape(const char* op, const Shape& shape) {
  int64_t span = 1, numel = 1;
  for (int64_t s : shape) {
    ANVIL_CHECK(s >= 0, op, ": negative size in shape ", shape);
    ANVIL_CHECK(!__builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span), op, ": shape ", shape,
                " has too many elements (its strides overflow int64)");
    numel *= s;  // cannot overflow: |numel| <= span
  }
  int64_t bytes = 0;
  ANVIL_CHECK(numel == 0 || !__builtin_mul_overflow(numel, int64_t{8}, &bytes), op, ": shape ", shape,
              " has too many elements (more than 2^60)");
}

Tensor random_tensor(const char* op, const Shape& shape, const TensorOptions& o, RandomParams p) {
  check_shape(op, shape);
  Tensor t = empty(shape, o);
  GeneratorState s = reserve_random(static_cast<uint64_t>(t.numel()));
  p.seed = s.seed;
  p.offset = s.offset;
  if (t.numel() > 0) detail::kernel_of<kernel::Random>(t)(t.view_of(), p);
  return finish(t, o);
}

}  // namespace

Tensor empty(const Shape& shape, const TensorOptions& o) {
  check_shape("empty", shape);
  int64_t n = numel_of(shape);
  auto storage = Storage::allocate(static_cast<size_t>(n) * itemsize(o.dtype_), o.device_);
  return finish(make_tensor(std::move(storage), shape, contiguous_strides(shape), 0, o.dtype_), o);
}

Tensor full(const Shape& shape, const Scalar& value, const TensorOptions& o) {
  Tensor t = empty(shape, o.requires_grad(false));
  if (t.numel() > 0) detail::kernel_of<kernel::Fill>(t)(t.view_of(), value);
  return finish(t, o);
}

Tensor zeros(const Shape& shape, const TensorOptions& o) { return full(shape, 0, o); }
Tensor ones(const Shape& shape, const TensorOptions& o) { return full(shape, 1, o); }
Tensor scalar_tensor(const Scalar& value, const TensorOptions& o) { return full({}, value, o); }

Tensor arange(double end, const TensorOptions& o) { return arange(0, end, 1, o); }

Tensor arange(double start, double end, double step, const TensorOptions& o) {
  ANVIL_CHECK(step != 0, "arange: step must be non-zero");
  ANVIL_CHECK((end - start) / step >= 0, "arange: start ", start, ", end ", end, " and step ", step,
              " give a negative length");
  auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return from_vector(values, {n}, o);
}

Tensor eye(int64_t n, const TensorOptions& o) {
  ANVIL_CHECK(n >= 0, "eye: n must be non-negative, got ", n);
  std::vector<double> values(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) values[i * n + i] = 1.0;
  return from_vector(values, {n, n}, o);
}

Tensor rand(const Shape& shape, const TensorOptions& o) {
  ANVIL_CHECK(is_floating(o.dtype_), "rand: expected a floating dtype, got ", o.dtype_);
  return random_tensor("rand", shape, o, {RandomKind::Uniform, 0.0, 1.0});
}

Tensor randn(const Shape& shape, const TensorOptions& o) {
  ANVIL_CHECK(is_floating(o.dtype_), "randn: expected a floating dtype, got ", o.dtype_);
  return random_tensor("randn", shape, o, {RandomKind::Normal, 0.0, 1.0});
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& o) {
  ANVIL_CHECK(high > low, "randint: expected low < high, got low ", low, " and high ", high);
  return random_tensor("randint", shape, o, {RandomKind::Uniform, static_cast<double>(low), static_cast<double>(high)});
}

Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
Tensor full_like(const Tensor& t, const Scalar& v) { return full(t.shape(), v, t.options()); }
Tensor rand_like(const Tensor& t) { return rand(t.shape(), t.options()); }
Tensor randn_like(const Tensor& t) { return randn(t.shape(), t.options()); }

template <typename T> Tensor from_vector(const std::vector<T>& values, const Shape& shape_in, const TensorOptions& o) {
  Shape shape = shape_in.empty() ? Shape{static_cast<int64_t>(values.size())} : shape_in;
  ANVIL_CHECK(numel_of(shape) == static_cast<int64_t>(values.size()), "from_vector: ", values.size(),
              " values do not fill shape ", shape);
  // Wrap the host values, then convert dtype and move to the device.
  Tensor host = make_tensor(
      std::make_shared<Storage>(const_cast<T*>(values.data()), values.size() * sizeof(T), Device::cpu(), nullptr),
      shape, contiguous_strides(shape), 0, dtype_of<T>::value);
  Tensor out = empty(shape, o.requires_grad(false));
  out.copy_(host);
  return finish(out, o);
}

template Tensor from_vector(const std::vector<float>&, const Shape&, const TensorOptions&);
template Tensor from_vector(const std::vector<double>&, const Shape&, const TensorOptions&);
template Tensor from_vector(const std::vector<int32_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector(const std::vector<int64_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector(const std::vector<uint8_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector(const std::vector<Half>&, const Shape&, const TensorOptions&);
template Tensor from_vector(const std::vector<BFloat16>&, const Shape&, const TensorOptions&);

Tensor tensor(std::initializer_list<double> values, const TensorOptions& o) {
  return from_vector(std::vector<double>(values), {static_cast<int64_t>(values.size())}, o);
}

Tensor from_blob(void* data, const Shape& shape, const TensorOptions& o, std::function<void(void*)> release) {
  check_shape("from_blob", shape);
  ANVIL_CHECK(data != nullptr || numel_of(shape) == 0, "from_blob: null data pointer for shape ", shape);
  size_t nbytes = static_cast<size_t>(numel_of(shape)) * itemsize(o.dtype_);
  auto storage = std::make_shared<Storage>(data, nbytes, o.device_, std::move(release));
  return finish(make_tensor(std::move(storage), shape, contiguous_strides(shape), 0, o.dtype_), o);
}

}  // namespace anvil
