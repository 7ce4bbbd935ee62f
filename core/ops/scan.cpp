// Scans: validation, the result dtype, the backend's scan, and the gradients
// written with anvil ops (so they run, and differentiate again, on every device).
#include "core/autocast.h"
#include "core/ops/scan.h"

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape.h"

namespace anvil {

using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// The backend's scan of x (already in the result dtype) along a wrapped dim.
Tensor scan_kernel(ScanOp op, const Tensor& x, int64_t dim) {
  Tensor out = empty(x.shape(), x.options());
  if (out.numel() > 0) detail::kernel_of<kernel::Scan>(x)(op, out.view_of(), x.view_of(), dim);
  return out;
}

// The input in the dtype the scan computes and returns: `dtype` if given,
// else int64 for bool and integers (as PyTorch's sum-like results).
Tensor scan_input(const char* op, const Tensor& x, int64_t& dim, std::optional<DType> dtype) {
  detail::check_defined(op, x, "input");
  dim = wrap_dim(dim, x.dim(), op);
  const DType want = dtype ? *dtype : is_floating(x.dtype()) ? x.dtype() : kInt64;
  ANVIL_CHECK(want != kBool, op, ": cannot accumulate in bool (input ", detail::describe(x), ")");
  return want == x.dtype() ? x : x.to(want);
}

// Sums from the end: out[i] = g[i] + ... + g[n - 1] along dim.
Tensor reverse_cumsum(const Tensor& g, int64_t dim) { return flip(cumsum(flip(g, dim), dim), dim); }

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (auto cast = autocast::full_precision_inputs(x)) return cumsum(cast[0], dim, dtype);
  Tensor in = scan_input("cumsum", x, dim, dtype);
  Tensor out = scan_kernel(ScanOp::Sum, in.detach(), dim);
  if (autograd::needs_grad({in}) && is_floating(out.dtype()))
    autograd::record("cumsum", {in}, out, [dim](const Tensor& g) { return Grads{reverse_cumsum(g, dim)}; });
  return out;
}

// d/dx_k of sum_i g_i y_i, y_i = x_0 ... x_i, is sum_{i >= k} g_i * (the
// product up to i without x_k). Before the first zero of the line x_k is not
// zero: that is reverse_cumsum(g * y) / x_k. At the first zero it is the
// same sum with x_k replaced by 1 (so the products past it are not zero);
// past the first zero every such product holds that zero: 0. As PyTorch.
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (auto cast = autocast::full_precision_inputs(x)) return cumprod(cast[0], dim, dtype);
  Tensor in = scan_input("cumprod", x, dim, dtype);
  Tensor out = scan_kernel(ScanOp::Prod, in.detach(), dim);
  if (autograd::needs_grad({in}) && is_floating(out.dtype()))
    autograd::record("cumprod", {in}, out,
                     [sx = SavedTensor(in, "cumprod"), sy = SavedTensor::output(out, "cumprod"), dim](const Tensor& g) {
                       Tensor xv = sx.get(), y = sy.get();
                       Tensor zeros_so_far = cumsum(eq(xv, 0.0), dim);  // int64
                       Tensor before = eq(zeros_so_far, 0);
                       Tensor first_zero = logical_and(eq(xv, 0.0), eq(zeros_so_far, 1));
                       Tensor safe_x = where(before, xv, 1.0);
                       Tensor grad_before = reverse_cumsum(g * y, dim) / safe_x;
                       Tensor grad_at_zero = reverse_cumsum(g * cumprod(where(first_zero, 1.0, xv), dim), dim);
                       return Grads{where(before, grad_before, where(first_zero, grad_at_zero, 0.0))};
                     });
  return out;
}

// d/dx_k = sum_{i >= k} g_i exp(x_k - y_i), summed in log space (a reversed
// logcumsumexp) for the positive and the negative parts of g apart, so that
// neither exp(x_k) nor exp(-y_i) overflows on its own.
Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  detail::check_defined("logcumsumexp", x, "input");
  ANVIL_CHECK(is_floating(x.dtype()), "logcumsumexp: expected a floating input, got ", detail::describe(x),
              "; cast it first, e.g. x.to(kFloat32)");
  dim = wrap_dim(dim, x.dim(), "logcumsumexp");
  Tensor out = scan_kernel(ScanOp::LogSumExp, x.detach(), dim);
  if (autograd::needs_grad({x}))
    autograd::record(
        "logcumsumexp", {x}, out,
        [sx = SavedTensor(x, "logcumsumexp"), sy = SavedTensor::output(out, "logcumsumexp"), dim](const Tensor& g) {
          Tensor xv = sx.get(), y = sy.get();
          auto part = [&](const Tensor& gp) {  // gp >= 0
            Tensor reversed = flip(logcumsumexp(flip(log(gp) - y, dim), dim), dim);
            return exp(xv + reversed);
          };
          return Grads{part(relu(g)) - part(relu(-g))};
        });
  return out;
}

}  // namespace anvil
