// Indexing ops: index_select / index_add and gather / scatter_add are each
// other's gradients (gather and scatter's too); embedding is index_select
// over flattened indices.
#include "core/ops/indexing.h"

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/shape.h"
#include "kernels/ops/index_kernels.h"

namespace anvil {

using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// The index as int64 on the input's device (int32 is widened), no history.
Tensor as_index(const char* op, const Tensor& index, const Tensor& x) {
  detail::check_defined(op, index, "index");
  ANVIL_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op, ": expected an int64 (or int32) index, got ",
              detail::describe(index));
  detail::check_same_device(op, {x, index});
  return index.dtype() == kInt64 ? index.detach() : index.detach().to(kInt64);
}

// Bounds check on the front end where it costs no device sync (CPU); other
// backends report bad indices from their kernels.
void check_range(const char* op, const Tensor& index, int64_t size, int64_t dim, const Tensor& x) {
  if (!index.device().is_cpu() || index.numel() == 0) return;
  Tensor dense = index.contiguous();
  const int64_t* p = dense.data<int64_t>();
  for (int64_t i = 0, n = dense.numel(); i < n; ++i)
    ANVIL_CHECK(p[i] >= 0 && p[i] < size, op, ": index ", p[i], " is out of range for dim ", dim, " of size ", size,
                " (input ", detail::describe(x), "; expected 0 to ", size - 1, ")");
}

// The first index.size(k) elements of t along every dim k (a view).
Tensor leading_block(const Tensor& t, const Shape& shape) {
  Tensor r = t;
  for (int64_t k = 0; k < t.dim(); ++k)
    if (r.shape()[k] != shape[k]) r = r.narrow(k, 0, shape[k]);
  return r;
}

// Zero-pads t at the end of each dim up to `shape` (differentiable).
Tensor pad_to(Tensor t, const Shape& shape) {
  for (int64_t k = 0; k < t.dim(); ++k) {
    if (t.shape()[k] == shape[k]) continue;
    Shape fill = t.shape();
    fill[k] = shape[k] - t.shape()[k];
    t = cat({t, zeros(fill, t.options())}, k);
  }
  return t;
}

Tensor index_select_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index_in) {
  detail::check_defined(op, x, "input");
  Tensor index = as_index(op, index_in, x);
  ANVIL_CHECK(index.dim() <= 1, op, ": expected a 1-D index, got ", detail::describe(index_in));
  ANVIL_CHECK(x.dim() >= 1, op, ": expected an input with at least 1 dim, got ", detail::describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor flat = index.reshape({index.numel()});
  check_range(op, flat, x.shape()[d], d, x);
  Shape shape = x.shape();
  shape[d] = flat.numel();
  Tensor out = empty(shape, x.options());
  if (out.numel() > 0) detail::kernel_of<kernel::IndexSelect>(x)(out.view_of(), x.view_of(), d, flat.view_of());
  if (autograd::needs_grad({x}))
    autograd::record(op, {x}, out, [flat, shape = x.shape(), d](const Tensor& g) {
      return Grads{index_add(zeros(shape, g.options()), d, flat, g)};
    });
  return out;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return index_select_impl("index_select", x, dim, index);
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src) {
  const char* op = "index_add";
  detail::check_defined(op, self, "self");
  detail::check_defined(op, src, "src");
  detail::check_same_device(op, {self, index_in, src});
  Tensor index = as_index(op, index_in, self);
  ANVIL_CHECK(index.dim() <= 1, op, ": expected a 1-D index, got ", detail::describe(index_in));
  ANVIL_CHECK(self.dim() >= 1, op, ": expected self with at least 1 dim, got ", detail::describe(self));
  ANVIL_CHECK(src.dtype() == self.dtype(), op, ": expected self and src of the same dtype, got self ",
              detail::describe(self), " and src ", detail::describe(src));
  const int64_t d = wrap_dim(dim, self.dim(), op);
  Tensor flat = index.reshape({index.numel()});
  Shape expected = self.shape();
  expected[d] = flat.numel();
  ANVIL_CHECK(src.shape() == expected, op, ": expected src of shape ", expected, " (self ", self.shape(), " with dim ",
              d, " the index length ", flat.numel(), "), got ", src.shape());
  check_range(op, flat, self.shape()[d], d, self);
  Tensor out = self.detach().clone();
  if (src.numel() > 0) detail::kernel_of<kernel::IndexAdd>(out)(out.view_of(), d, flat.view_of(), src.view_of());
  if (autograd::needs_grad({self, src}))
    autograd::record(op, {self, src}, out, [flat, d, need_src = src.requires_grad()](const Tensor& g) {
      return Grads{g, need_src ? index_select(g, d, flat) : Tensor()};
    });
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index_in) {
  const char* op = "gather";
  detail::check_defined(op, x, "input");
  Tensor index = as_index(op, index_in, x);
  ANVIL_CHECK(index.dim() == x.dim(), op, ": index must have as many dims as the input, got input ",
              detail::describe(x), " and index ", detail::describe(index_in));
  if (x.dim() == 0) {
    wrap_dim(dim, 0, op);
    return gather(x.reshape({1}), 0, index.reshape({1})).reshape({});
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  for (int64_t k = 0; k < x.dim(); ++k)
    ANVIL_CHECK(k == d || index.shape()[k] <= x.shape()[k], op, ": index ", detail::describe(index_in),
                " is larger than input ", detail::describe(x), " in dim ", k, " (only dim ", d, " may be larger)");
  check_range(op, index, x.shape()[d], d, x);
  Tensor out = empty(index.shape(), x.options());
  if (out.numel() > 0) detail::kernel_of<kernel::Gather>(x)(out.view_of(), x.view_of(), d, index.view_of());
  if (autograd::needs_grad({x}))
    autograd::record(op, {x}, out, [index, shape = x.shape(), d](const Tensor& g) {
      return Grads{scatter_add(zeros(shape, g.options()), d, index, g)};
    });
  return out;
}

namespace {

ScatterReduce parse_reduce(const char* op, std::string_view reduce) {
  if (reduce == "add") return ScatterReduce::Add;
  if (reduce == "multiply") return ScatterReduce::Multiply;
  fail(op, ": reduce must be \"add\" or \"multiply\", got \"", reduce, "\"");
}

// Validates and writes src into `out` (already self's copy, or self for the
// in-place forms) at index along dim; returns dim wrapped. A 0-d self is
// handled as [1], as PyTorch does.
int64_t scatter_into(const char* op, const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                     ScatterReduce reduce) {
  ANVIL_CHECK(src.dtype() == out.dtype(), op, ": expected self and src of the same dtype, got self ",
              detail::describe(out), " and src ", detail::describe(src));
  ANVIL_CHECK(index.dim() == out.dim() && src.dim() == out.dim(), op,
              ": self, index and src must have the same number of dims, got self ", detail::describe(out), ", index ",
              detail::describe(index), " and src ", detail::describe(src));
  if (out.dim() == 0) {
    wrap_dim(dim, 0, op);
    scatter_into(op, out.reshape({1}), 0, index.reshape({1}), src.reshape({1}), reduce);
    return 0;
  }
  const int64_t d = wrap_dim(dim, out.dim(), op);
  for (int64_t k = 0; k < out.dim(); ++k) {
    ANVIL_CHECK(index.shape()[k] <= src.shape()[k], op, ": index ", detail::describe(index), " is larger than src ",
                detail::describe(src), " in dim ", k);
    ANVIL_CHECK(k == d || index.shape()[k] <= out.shape()[k], op, ": index ", detail::describe(index),
                " is larger than self ", detail::describe(out), " in dim ", k, " (only dim ", d, " may be larger)");
  }
  check_range(op, index, out.shape()[d], d, out);
  // Only the part of src that index covers takes part.
  Tensor src_part = leading_block(src.detach(), index.shape());
  if (index.numel() > 0)
    detail::kernel_of<kernel::Scatter>(out)(out.view_of(), d, index.view_of(), src_part.view_of(), reduce);
  return d;
}

Tensor scatter_impl(const char* op, const Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src,
                    ScatterReduce reduce) {
  detail::check_defined(op, self, "self");
  detail::check_defined(op, src, "src");
  detail::check_same_device(op, {self, index_in, src});
  Tensor index = as_index(op, index_in, self);
  const bool grad = autograd::needs_grad({self, src});
  ANVIL_CHECK(!(grad && reduce == ScatterReduce::Multiply), op,
              ": the gradient of reduce=\"multiply\" is not implemented (as in PyTorch); input ",
              detail::describe(self));
  Tensor out = self.detach().clone();
  const int64_t d = scatter_into(op, out, dim, index, src, reduce);
  if (grad)
    autograd::record(op, {self, src}, out,
                     [index, d, reduce, src_shape = src.shape(), need_src = src.requires_grad()](const Tensor& g) {
                       // Overwritten positions pass no gradient to self; src gets what its entries were sent to.
                       Tensor g_self = reduce == ScatterReduce::Add ? g : scatter(g, d, index, Scalar(0));
                       return Grads{g_self, need_src ? pad_to(gather(g, d, index), src_shape) : Tensor()};
                     });
  return out;
}

// A scalar as a src of index's shape (stride 0: no copy).
Tensor scalar_src(const Scalar& value, const Tensor& self, const Tensor& index) {
  return scalar_tensor(value, self.options()).expand(index.shape());
}

}  // namespace

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", self, dim, index, src, ScatterReduce::Add);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", self, dim, index, src, ScatterReduce::None);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  detail::check_defined("scatter", index, "index");
  return scatter_impl("scatter", self, dim, index, scalar_src(value, self, index), ScatterReduce::None);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return scatter_impl("scatter", self, dim, index, src, parse_reduce("scatter", reduce));
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  detail::check_defined("scatter", index, "index");
  return scatter_impl("scatter", self, dim, index, scalar_src(value, self, index), parse_reduce("scatter", reduce));
}

Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  const char* op = "scatter_";
  const ScatterReduce r = reduce.empty() ? ScatterReduce::None : parse_reduce(op, reduce);
  if (autograd::needs_grad({self, src})) {
    autograd::rebase_history(op, self, scatter_impl(op, self, dim, index, src, r));
    return self;
  }
  autograd::check_inplace(op, self);
  detail::check_defined(op, self, "self");
  detail::check_defined(op, src, "src");
  detail::check_same_device(op, {self, index, src});
  Tensor s = src.storage() == self.storage() ? src.clone() : src;  // src read while self is written
  scatter_into(op, self, dim, as_index(op, index, self), s, r);
  self.bump_version();
  return self;
}
Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  detail::check_defined("scatter_", index, "index");
  detail::check_defined("scatter_", self, "self");
  return scatter_(self, dim, index, scalar_src(value, self, index), reduce);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  const char* op = "embedding";
  detail::check_dim(op, weight, 2, "weight");
  Tensor index = as_index(op, indices, weight);
  Shape shape = index.shape();
  shape.push_back(weight.shape()[1]);
  return index_select_impl(op, weight, 0, index.reshape({-1})).reshape(shape);
}

}  // namespace anvil
