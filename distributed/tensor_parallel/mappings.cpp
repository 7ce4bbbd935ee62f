#include "distributed/tensor_parallel/mappings.h"

#include <functional>
#include <utility>
#include <vector>

#include "core/autograd/function.h"
#include "core/base/error.h"
#include "core/factory.h"
#include "core/ops/shape.h"

namespace anvil::distributed::tensor_parallel {

namespace {

int64_t wrap_dim(const Tensor& x, int64_t dim, const char* what) {
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  ANVIL_CHECK(d >= 0 && d < x.dim(), what, ": dimension ", dim, " is out of range for a tensor of shape ",
              x.shape_str());
  return d;
}

// Gives `out` (fresh data, computed without grad) the history of `x` through
// `backward`, which maps out's gradient to x's.
Tensor with_backward(const char* name, const Tensor& x, Tensor out, std::function<Tensor(const Tensor&)> backward) {
  if (autograd::needs_grad({x}))
    autograd::record(name, {x}, out,
                     [backward = std::move(backward)](const Tensor& g) { return std::vector<Tensor>{backward(g)}; });
  return out;
}

}  // namespace

Tensor all_reduce_sum(const Tensor& x, ProcessGroup& group) {
  Tensor out = x.contiguous().clone();  // the collective writes in place; never into the caller's tensor
  group.all_reduce(out, ReduceOp::Sum)->wait();
  return out;
}

Tensor all_gather_along(const Tensor& x, int64_t dim, ProcessGroup& group) {
  const int64_t d = wrap_dim(x, dim, "all_gather_along");
  const int64_t n = group.size();
  Tensor mine = x.contiguous();
  Tensor flat = empty({n * mine.numel()}, mine.options());
  group.all_gather(flat, mine)->wait();
  // The blocks arrive one rank after the other; laid side by side along dim.
  std::vector<Tensor> blocks;
  for (int64_t r = 0; r < n; ++r) blocks.push_back(flat.narrow(0, r * mine.numel(), mine.numel()).view(x.shape()));
  return cat(blocks, d);
}

Tensor reduce_scatter_along(const Tensor& x, int64_t dim, ProcessGroup& group) {
  const int64_t d = wrap_dim(x, dim, "reduce_scatter_along");
  const int64_t n = group.size();
  ANVIL_CHECK(x.size(d) % n == 0, "reduce_scatter_along: dimension ", d, " of ", x.shape_str(),
              " does not divide by the group's ", n, " ranks");
  // The collective cuts its input into consecutive blocks, one per rank, so
  // the slices of dim are laid out one after the other first.
  std::vector<Tensor> blocks;
  for (const Tensor& b : chunk(x, n, d)) blocks.push_back(b.contiguous().reshape({-1}));
  Tensor input = cat(blocks, 0);
  Shape shape = x.shape();
  shape[static_cast<size_t>(d)] /= n;
  Tensor out = empty(shape, x.options());
  group.reduce_scatter(out, input, ReduceOp::Sum)->wait();
  return out;
}

Tensor my_slice_along(const Tensor& x, int64_t dim, ProcessGroup& group, const char* what) {
  const int64_t d = wrap_dim(x, dim, what);
  const int64_t n = group.size(), size = x.size(d);
  ANVIL_CHECK(size % n == 0, what, ": dimension ", d, " of ", x.shape_str(), " (", size,
              ") does not divide by the tensor-parallel size ", n);
  return x.narrow(d, group.rank() * (size / n), size / n);
}

Tensor copy_to_tensor_parallel_region(const Tensor& x, const GroupPtr& group) {
  return with_backward("copy_to_tensor_parallel_region", x, x.detach(),
                       [group](const Tensor& g) { return all_reduce_sum(g, *group); });
}

Tensor reduce_from_tensor_parallel_region(const Tensor& x, const GroupPtr& group) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = all_reduce_sum(x, *group);
  }
  return with_backward("reduce_from_tensor_parallel_region", x, out, [](const Tensor& g) { return g; });
}

Tensor scatter_to_tensor_parallel_region(const Tensor& x, const GroupPtr& group) {
  Tensor out = my_slice_along(x.detach(), -1, *group, "scatter_to_tensor_parallel_region").contiguous();
  return with_backward("scatter_to_tensor_parallel_region", x, out,
                       [group](const Tensor& g) { return all_gather_along(g, -1, *group); });
}

Tensor gather_from_tensor_parallel_region(const Tensor& x, const GroupPtr& group) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = all_gather_along(x, -1, *group);
  }
  return with_backward("gather_from_tensor_parallel_region", x, out, [group](const Tensor& g) {
    return my_slice_along(g, -1, *group, "gather_from_tensor_parallel_region").contiguous();
  });
}

Tensor scatter_to_sequence_parallel_region(const Tensor& x, int64_t dim, const GroupPtr& group) {
  Tensor out = my_slice_along(x.detach(), dim, *group, "scatter_to_sequence_parallel_region").contiguous();
  return with_backward("scatter_to_sequence_parallel_region", x, out,
                       [group, dim](const Tensor& g) { return all_gather_along(g, dim, *group); });
}

Tensor gather_from_sequence_parallel_region(const Tensor& x, int64_t dim, const GroupPtr& group) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = all_gather_along(x, dim, *group);
  }
  return with_backward("gather_from_sequence_parallel_region", x, out,
                       [group, dim](const Tensor& g) { return reduce_scatter_along(g, dim, *group); });
}

Tensor reduce_scatter_to_sequence_parallel_region(const Tensor& x, int64_t dim, const GroupPtr& group) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = reduce_scatter_along(x, dim, *group);
  }
  return with_backward("reduce_scatter_to_sequence_parallel_region", x, out,
                       [group, dim](const Tensor& g) { return all_gather_along(g, dim, *group); });
}

}  // namespace anvil::distributed::tensor_parallel
