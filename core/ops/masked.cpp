// nonzero, masked_select, masked_scatter and take_along_dim: nonzero has its
// own backend kernel (a count, then a fill); the others are composed from
// nonzero, index_select, scatter and gather, whose gradients they inherit.
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "kernels/ops/index_kernels.h"

namespace anvil {
namespace {

void check_mask(const char* op, const Tensor& mask) {
  detail::check_defined(op, mask, "mask");
  ANVIL_CHECK(mask.dtype() == kBool, op, ": expected a bool mask, got ", detail::describe(mask));
}

// The flat positions (int64 [n]) where the broadcast mask is true.
Tensor true_positions(const Tensor& mask, const Shape& shape) {
  return nonzero(mask.expand(shape).reshape({-1})).reshape({-1});
}

}  // namespace

Tensor nonzero(const Tensor& x) {
  detail::check_defined("nonzero", x, "input");
  Tensor in = x.detach();
  // The output's size is data-dependent: count on the device, read it here.
  const int64_t n = in.numel() == 0 ? 0 : ne(in, Scalar(0)).sum().item<int64_t>();
  Tensor out = empty({n, in.dim()}, TensorOptions().dtype(kInt64).device(in.device()));
  if (out.numel() > 0) detail::kernel_of<kernel::Nonzero>(in)(out.view_of(), in.view_of());
  return out;
}

Tensor argwhere(const Tensor& x) { return nonzero(x); }

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  detail::check_defined(op, x, "input");
  check_mask(op, mask);
  detail::check_same_device(op, {x, mask});
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), op);
  return index_select(x.expand(shape).reshape({-1}), 0, true_positions(mask, shape));
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* op = "masked_scatter";
  detail::check_defined(op, self, "self");
  detail::check_defined(op, source, "source");
  check_mask(op, mask);
  detail::check_same_device(op, {self, mask, source});
  ANVIL_CHECK(source.dtype() == self.dtype(), op, ": expected self and source of the same dtype, got self ",
              detail::describe(self), " and source ", detail::describe(source));
  const Shape shape = broadcast_shapes(self.shape(), mask.shape(), op);
  Tensor positions = true_positions(mask, shape);
  const int64_t n = positions.numel();
  ANVIL_CHECK(source.numel() >= n, op, ": mask ", detail::describe(mask), " selects ", n, " elements but source ",
              detail::describe(source), " has only ", source.numel());
  Tensor taken = source.reshape({-1}).narrow(0, 0, n);
  return scatter(self.expand(shape).reshape({-1}), 0, positions, taken).reshape(shape);
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  const char* op = "take_along_dim";
  detail::check_defined(op, x, "input");
  detail::check_defined(op, indices, "indices");
  ANVIL_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32, op, ": expected int64 (or int32) indices, got ",
              detail::describe(indices));
  if (!dim) return gather(x.reshape({-1}), 0, indices.reshape({-1}));
  ANVIL_CHECK(x.dim() == indices.dim(), op, ": input and indices must have the same number of dims, got input ",
              detail::describe(x), " and indices ", detail::describe(indices));
  if (x.dim() == 0) return gather(x, *dim, indices);
  const int64_t d = wrap_dim(*dim, x.dim(), op);
  // Broadcast every dim but d (size 1 there so broadcast_shapes leaves it alone).
  Shape xs = x.shape(), is = indices.shape();
  xs[d] = 1;
  is[d] = 1;
  Shape x_shape = broadcast_shapes(xs, is, op), index_shape = x_shape;
  x_shape[d] = x.shape()[d];
  index_shape[d] = indices.shape()[d];
  return gather(x.expand(x_shape), d, indices.expand(index_shape));
}

}  // namespace anvil
