// Reductions, arg-reductions and softmax: validation, the keepdim-shaped
// backend call, and each op's gradient written with anvil ops.
#include "core/autocast.h"
#include "core/ops/reduce.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/shape.h"

namespace anvil {

using autograd::GradMode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// Which dims a reduction removes, and the shapes around it. The backend
// always writes the keepdim form; the result drops dims with a view.
struct ReducePlan {
  Shape keep_shape;  // the input's shape with reduced dims set to 1
  Shape out_shape;  // keep_shape, or keep_shape without the reduced dims
  Shape dims;  // reduced dims, ascending (an explicit list for the backward)
  int64_t count = 1;  // input elements per output element
};

ReducePlan plan_reduce(const char* op, const Tensor& x, const Shape& dims, bool keepdim) {
  detail::check_defined(op, x, "input");
  const int64_t ndim = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;  // a 0-d tensor reduces to itself
    ANVIL_CHECK(!reduced[w], op, ": dim ", w, " appears more than once in dims ", dims);
    reduced[w] = true;
  }
  ReducePlan p;
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t size = x.shape()[d];
    if (reduced[d]) {
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
      p.dims.push_back(d);
      p.count *= size;
    } else {
      p.keep_shape.push_back(size);
      p.out_shape.push_back(size);
    }
  }
  return p;
}

// Runs the backend reduction into a keepdim-shaped output and returns the
// result in plan.out_shape (no autograd).
Tensor reduce_kernel(const char* op, ReduceOp rop, const Tensor& in, const ReducePlan& plan, DType out_dtype,
                     const ReduceParams& params = {}) {
  if (!ops::reduce_has_identity(rop, params)) {
    for (int64_t d : plan.dims)
      ANVIL_CHECK(in.shape()[d] != 0, op, ": cannot reduce over dim ", d, " of size 0 (input ", detail::describe(in),
                  "): the reduction has no identity; choose other dims or a non-empty input");
  }
  Tensor out = empty(plan.keep_shape, in.options().dtype(out_dtype));
  if (out.numel() > 0) {
    if (in.numel() == 0)
      detail::kernel_of<kernel::Fill>(in)(out.view_of(), ops::reduce_empty_value(rop));
    else
      detail::kernel_of<kernel::Reduce>(in)(rop, out.view_of(), in.view_of(), params);
  }
  return alias_with(out, plan.out_shape, contiguous_strides(plan.out_shape), 0);
}

// The gradient of a reduced result in the keepdim shape, ready to broadcast
// against the input.
Tensor keep(const Tensor& g, const Shape& keep_shape) { return g.reshape(keep_shape); }

void check_floating_input(const char* op, const Tensor& x) {
  detail::check_defined(op, x, "input");
  ANVIL_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", detail::describe(x),
              "; cast it first, e.g. x.to(kFloat32)");
}

// Sum and prod of bool/integer inputs accumulate in int64, like PyTorch (the
// reduction table's result rule): the backend reduces the converted input.
Tensor accumulation_input(ReduceOp op, const Tensor& x) {
  const DType acc = ops::reduce_result_dtype(op, x.dtype());
  return acc == x.dtype() ? x : x.detach().to(acc);
}

}  // namespace

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  if (auto cast = autocast::full_precision_inputs(x)) return sum(cast[0], dims, keepdim);
  ReducePlan plan = plan_reduce("sum", x, dims, keepdim);
  Tensor in = accumulation_input(ReduceOp::Sum, x);
  Tensor out = reduce_kernel("sum", ReduceOp::Sum, in, plan, in.dtype());
  if (autograd::needs_grad({x}))
    autograd::record("sum", {x}, out, [keep_shape = plan.keep_shape, shape = x.shape()](const Tensor& g) {
      return Grads{keep(g, keep_shape).expand(shape)};
    });
  return out;
}

Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  detail::check_defined("mean", x, "input");
  ANVIL_CHECK(is_floating(x.dtype()), "mean: expected a floating input, got ", detail::describe(x),
              "; an integer mean has no integer result, cast first, e.g. x.to(kFloat32)");
  ReducePlan plan = plan_reduce("mean", x, dims, keepdim);
  Tensor out = reduce_kernel("mean", ReduceOp::Mean, x, plan, x.dtype());
  if (autograd::needs_grad({x}))
    autograd::record("mean", {x}, out,
                     [keep_shape = plan.keep_shape, shape = x.shape(), n = plan.count](const Tensor& g) {
                       return Grads{keep(g, keep_shape).expand(shape) / static_cast<double>(n)};
                     });
  return out;
}

namespace {

// amax/amin: ties share the gradient evenly, as in PyTorch.
Tensor extremum(const char* op, ReduceOp rop, const Tensor& x, const Shape& dims, bool keepdim) {
  ReducePlan plan = plan_reduce(op, x, dims, keepdim);
  Tensor out = reduce_kernel(op, rop, x, plan, x.dtype());
  if (autograd::needs_grad({x}))
    autograd::record(op, {x}, out,
                     [sx = SavedTensor(x, op), sy = SavedTensor(out.detach(), op), keep_shape = plan.keep_shape,
                      rdims = plan.dims](const Tensor& g) {
                       Tensor mask = eq(sx.get(), keep(sy.get(), keep_shape)).to(g.dtype());
                       Tensor ties = sum(mask, rdims, true);
                       return Grads{keep(g, keep_shape) * mask / ties};
                     });
  return out;
}

}  // namespace

Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return extremum("amax", ReduceOp::Max, x, dims, keepdim);
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return extremum("amin", ReduceOp::Min, x, dims, keepdim);
}

Tensor prod(const Tensor& x, const Shape& dims, bool keepdim) {
  if (auto cast = autocast::full_precision_inputs(x)) return prod(cast[0], dims, keepdim);
  ReducePlan plan = plan_reduce("prod", x, dims, keepdim);
  Tensor in = accumulation_input(ReduceOp::Prod, x);
  Tensor out = reduce_kernel("prod", ReduceOp::Prod, in, plan, in.dtype());
  if (autograd::needs_grad({x}))
    autograd::record("prod", {x}, out,
                     [sx = SavedTensor(x, "prod"), keep_shape = plan.keep_shape, rdims = plan.dims](const Tensor& g) {
                       // d prod / d x_i is the product of the other elements. Dividing the
                       // product by x_i fails at zeros, so zeros are handled apart: with one
                       // zero in a slice only that element gets a gradient, with more none does.
                       Tensor xv = sx.get();
                       Tensor is_zero = eq(xv, 0.0);
                       Tensor zero = scalar_tensor(0, xv.options());
                       Tensor safe = where(is_zero, ones_like(xv), xv);
                       Tensor prod_nonzero = prod(safe, rdims, true);
                       Tensor zeros_in_slice = sum(is_zero, rdims, true);
                       Tensor at_nonzero = where(eq(zeros_in_slice, 0), prod_nonzero / safe, zero);
                       Tensor at_zero = where(eq(zeros_in_slice, 1), prod_nonzero, zero);
                       return Grads{keep(g, keep_shape) * where(is_zero, at_zero, at_nonzero)};
                     });
  return out;
}

Tensor var(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  check_floating_input("var", x);
  ReducePlan plan = plan_reduce("var", x, dims, keepdim);
  Tensor out = reduce_kernel("var", ReduceOp::Var, x, plan, x.dtype(), ReduceParams{correction, 2.0});
  if (autograd::needs_grad({x}))
    autograd::record("var", {x}, out,
                     [sx = SavedTensor(x, "var"), keep_shape = plan.keep_shape, rdims = plan.dims,
                      denom = static_cast<double>(plan.count - correction)](const Tensor& g) {
                       Tensor xv = sx.get();
                       Tensor centered = xv - mean(xv, rdims, true);
                       return Grads{keep(g, keep_shape) * centered * (2.0 / denom)};
                     });
  return out;
}

Tensor std(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  check_floating_input("std", x);
  ReducePlan plan = plan_reduce("std", x, dims, keepdim);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = sqrt(reduce_kernel("std", ReduceOp::Var, x, plan, x.dtype(), ReduceParams{correction, 2.0}));
  }
  if (autograd::needs_grad({x})) {
    autograd::record("std", {x}, out,
                     [sx = SavedTensor(x, "std"), sy = SavedTensor::output(out, "std"), keep_shape = plan.keep_shape,
                      rdims = plan.dims, denom = static_cast<double>(plan.count - correction)](const Tensor& g) {
                       // g * (x - mean) / (denom * std); 0 where std is 0, as in PyTorch.
                       Tensor xv = sx.get();
                       Tensor s = keep(sy.get(), keep_shape);
                       Tensor is_zero = eq(s, 0.0);
                       Tensor safe = where(is_zero, ones_like(s), s);
                       Tensor zero = scalar_tensor(0, s.options());
                       Tensor scale = where(is_zero, zero, keep(g, keep_shape) / (safe * denom));
                       return Grads{scale * (xv - mean(xv, rdims, true))};
                     });
  }
  return out;
}

Tensor norm(const Tensor& x, double p, const Shape& dims, bool keepdim) {
  if (auto cast = autocast::full_precision_inputs(x)) return norm(cast[0], p, dims, keepdim);
  check_floating_input("norm", x);
  ReducePlan plan = plan_reduce("norm", x, dims, keepdim);
  Tensor out = reduce_kernel("norm", ReduceOp::Norm, x, plan, x.dtype(), ReduceParams{1, p});
  if (autograd::needs_grad({x})) {
    autograd::record("norm", {x}, out,
                     [sx = SavedTensor(x, "norm"), sy = SavedTensor::output(out, "norm"), p,
                      keep_shape = plan.keep_shape, rdims = plan.dims](const Tensor& g) {
                       Tensor xv = sx.get();
                       Tensor gk = keep(g, keep_shape);
                       if (p == 0.0) return Grads{zeros_like(xv)};  // counts nonzeros: piecewise constant
                       if (p == 1.0) return Grads{gk * sign(xv)};
                       Tensor y = keep(sy.get(), keep_shape);
                       if (std::isinf(p)) {  // like amax/amin of |x|: ties share the gradient
                         Tensor mask = eq(abs(xv), y.detach()).to(g.dtype());
                         return Grads{gk * sign(xv) * mask / sum(mask, rdims, true)};
                       }
                       // g * sign(x) |x|^(p-1) / norm^(p-1); 0 where the norm is 0.
                       Tensor is_zero = eq(y, 0.0);
                       Tensor safe = where(is_zero, ones_like(y), y);
                       Tensor zero = scalar_tensor(0, y.options());
                       if (p == 2.0) return Grads{where(is_zero, zero, gk / safe) * xv};
                       Tensor scale = where(is_zero, zero, gk / pow(safe, p - 1.0));
                       return Grads{scale * sign(xv) * pow(abs(xv), p - 1.0)};
                     });
  }
  return out;
}

namespace {

// max/min along one dim: values with their gradient, and int64 indices.
std::pair<Tensor, Tensor> extremum_with_index(const char* op, ReduceOp value_op, ReduceOp index_op, const Tensor& x,
                                              int64_t dim, bool keepdim) {
  detail::check_defined(op, x, "input");
  if (x.dim() == 0) {  // PyTorch: a 0-d input gives itself and index 0
    wrap_dim(dim, 0, op);
    return extremum_with_index(op, value_op, index_op, x.reshape({1}), 0, false);
  }
  int64_t d = wrap_dim(dim, x.dim(), op);
  ReducePlan plan = plan_reduce(op, x, {d}, keepdim);
  Tensor values = reduce_kernel(op, value_op, x, plan, x.dtype());
  Tensor indices = reduce_kernel(op, index_op, x, plan, kInt64);
  if (autograd::needs_grad({x}))
    autograd::record(
        op, {x}, values,
        [si = SavedTensor(indices, op), keep_shape = plan.keep_shape, shape = x.shape(), d](const Tensor& g) {
          Tensor index = keep(si.get(), keep_shape);
          return Grads{scatter_add(zeros(shape, g.options()), d, index, keep(g, keep_shape))};
        });
  return {values, indices};
}

Tensor arg_extremum(const char* op, ReduceOp rop, const Tensor& x, int64_t dim, bool keepdim) {
  detail::check_defined(op, x, "input");
  if (x.dim() == 0) {
    wrap_dim(dim, 0, op);
    return arg_extremum(op, rop, x.reshape({1}), 0, false);
  }
  int64_t d = wrap_dim(dim, x.dim(), op);
  return reduce_kernel(op, rop, x, plan_reduce(op, x, {d}, keepdim), kInt64);
}

}  // namespace

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extremum_with_index("max", ReduceOp::Max, ReduceOp::ArgMax, x, dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extremum_with_index("min", ReduceOp::Min, ReduceOp::ArgMin, x, dim, keepdim);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extremum("argmax", ReduceOp::ArgMax, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extremum("argmin", ReduceOp::ArgMin, x, dim, keepdim);
}
Tensor argmax(const Tensor& x) {
  detail::check_defined("argmax", x, "input");
  return arg_extremum("argmax", ReduceOp::ArgMax, x.detach().reshape({-1}), 0, false);
}
Tensor argmin(const Tensor& x) {
  detail::check_defined("argmin", x, "input");
  return arg_extremum("argmin", ReduceOp::ArgMin, x.detach().reshape({-1}), 0, false);
}

namespace {

Tensor softmax_impl(const char* op, bool log, const Tensor& x, int64_t dim) {
  if (auto cast = autocast::full_precision_inputs(x)) return softmax_impl(op, log, cast[0], dim);
  check_floating_input(op, x);
  if (x.dim() == 0) {
    wrap_dim(dim, 0, op);
    return softmax_impl(op, log, x.reshape({1}), 0).reshape({});
  }
  int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor out = empty(x.shape(), x.options());
  if (out.numel() > 0) detail::kernel_of<kernel::Softmax>(x)(out.view_of(), x.view_of(), d, log);
  if (autograd::needs_grad({x})) {
    autograd::record(op, {x}, out, [sy = SavedTensor::output(out, op), d, log](const Tensor& g) {
      Tensor y = sy.get();
      // Under create_graph the backward must itself be differentiable, so it
      // is composed from ops; otherwise one fused kernel does it.
      if (GradMode::is_enabled()) {
        if (log) return Grads{g - exp(y) * sum(g, {d}, true)};
        return Grads{y * (g - sum(g * y, {d}, true))};
      }
      Tensor grad_in = empty(y.shape(), y.options());
      Tensor grad_out = g.dtype() == y.dtype() ? g : g.to(y.dtype());
      if (grad_in.numel() > 0)
        detail::kernel_of<kernel::SoftmaxBackward>(y)(grad_in.view_of(), grad_out.view_of(), y.view_of(), d, log);
      return Grads{grad_in};
    });
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl("softmax", false, x, dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl("log_softmax", true, x, dim); }

}  // namespace anvil
