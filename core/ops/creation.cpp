// tril/triu as a where over a mask built from two aranges (so they run, and
// differentiate, on every device); linspace/logspace computed in float64
// from an arange, then cast.
#include "core/ops/creation.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"

namespace anvil {

namespace {

// Whether each (row, col) of x's last two dims is kept: col - row <= diagonal
// (tril) or >= diagonal (triu). Broadcasts against x.
Tensor triangle_mask(const char* op, const Tensor& x, int64_t diagonal, bool lower) {
  detail::check_defined(op, x, "input");
  ANVIL_CHECK(x.dim() >= 2, op, ": expected a tensor of at least 2 dims (a matrix or a batch of them), got ",
              detail::describe(x));
  const int64_t rows = x.size(-2), cols = x.size(-1);
  const TensorOptions o = TensorOptions(kInt64).device(x.device());
  Tensor offset = arange(cols, o).unsqueeze(0) - arange(rows, o).unsqueeze(1);  // col - row
  return lower ? le(offset, diagonal) : ge(offset, diagonal);
}

}  // namespace

// The mask first, in its own statement: it checks x, which the zero's
// x.options() would otherwise read first (argument order is unspecified).
Tensor tril(const Tensor& x, int64_t diagonal) {
  Tensor keep = triangle_mask("tril", x, diagonal, true);
  return where(keep, x, scalar_tensor(0, x.options()));
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  Tensor keep = triangle_mask("triu", x, diagonal, false);
  return where(keep, x, scalar_tensor(0, x.options()));
}

// As PyTorch: the first half counts up from start, the second half down from
// end, so both ends are exact.
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options) {
  ANVIL_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  const TensorOptions f64 = TensorOptions(kFloat64).device(options.device_);
  if (steps <= 1) return full({steps}, start, f64).to(options.dtype_).requires_grad_(options.requires_grad_);
  const double step = (end - start) / static_cast<double>(steps - 1);
  Tensor i = arange(steps, f64);
  Tensor up = i * step + start;
  Tensor down = (i - static_cast<double>(steps - 1)) * step + end;
  return where(lt(i, static_cast<double>(steps / 2)), up, down)
      .to(options.dtype_)
      .requires_grad_(options.requires_grad_);
}

Tensor logspace(double start, double end, int64_t steps, double base, const TensorOptions& options) {
  ANVIL_CHECK(steps >= 0, "logspace: number of steps must be non-negative, got ", steps);
  const TensorOptions f64 = TensorOptions(kFloat64).device(options.device_);
  Tensor exponents = linspace(start, end, steps, f64);
  return pow(full({steps}, base, f64), exponents).to(options.dtype_).requires_grad_(options.requires_grad_);
}

}  // namespace anvil
