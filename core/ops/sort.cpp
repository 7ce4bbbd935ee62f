// sort, argsort and topk: validation, the backend's sort, and the gradient
// (the incoming gradient scattered back through the indices).
#include "core/ops/sort.h"

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/indexing.h"
#include "core/ops/shape.h"

namespace anvil {

using Grads = std::vector<Tensor>;

namespace {

// values taken from x at `indices` along dim: the gradient puts g back there.
void record_selection(const char* op, const Tensor& x, Tensor& values, const Tensor& indices, int64_t dim) {
  if (!autograd::needs_grad({x})) return;
  autograd::record(op, {x}, values, [indices, dim, shape = x.shape()](const Tensor& g) {
    return Grads{scatter_add(zeros(shape, g.options()), dim, indices, g)};
  });
}

std::pair<Tensor, Tensor> sort_kernel(const Tensor& x, int64_t dim, bool descending) {
  Tensor values = empty(x.shape(), x.options());
  Tensor indices = empty(x.shape(), x.options().dtype(kInt64));
  if (x.numel() > 0)
    detail::kernel_of<kernel::Sort>(x)(values.view_of(), indices.view_of(), x.view_of(), dim,
                                       SortParams{descending, true});
  return {values, indices};
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  detail::check_defined("sort", x, "input");
  dim = wrap_dim(dim, x.dim(), "sort");
  auto [values, indices] = sort_kernel(x, dim, descending);
  record_selection("sort", x, values, indices, dim);
  return {values, indices};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  detail::check_defined("argsort", x, "input");
  dim = wrap_dim(dim, x.dim(), "argsort");
  return sort_kernel(x.detach(), dim, descending).second;
}

// The whole line sorted, then its first k: O(n log n) where a selection
// would do, but one kernel serves sort and topk on both devices.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  detail::check_defined("topk", x, "input");
  dim = wrap_dim(dim, x.dim(), "topk");
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[dim];
  ANVIL_CHECK(k >= 0 && k <= n, "topk: k = ", k, " out of range for dim ", dim, " of size ", n, " (input ",
              detail::describe(x), "); expected 0 <= k <= ", n);
  auto [all_values, all_indices] = sort_kernel(x.detach(), dim, largest);
  Tensor values = x.dim() == 0 ? all_values : all_values.narrow(dim, 0, k).contiguous();
  Tensor indices = x.dim() == 0 ? all_indices : all_indices.narrow(dim, 0, k).contiguous();
  record_selection("topk", x, values, indices, dim);
  return {values, indices};
}

}  // namespace anvil
