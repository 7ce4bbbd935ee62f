// x.index({...}) and x.index_put_({...}, v) (core/ops/tensor_index.h).
//
// Both first apply the basic indices (integers, slices, None, Ellipsis) as
// views, and turn bool masks into integer index tensors with nonzero. What is
// left are integer index tensors on some dims of that view; they broadcast
// together to a shape B.
//
// index: the indexed dims are merged into one (a view when they are
// adjacent in a contiguous tensor, as x[:, idx] on an embedding table) and
// read with one index_select of the combined (row-major) index; its gradient
// is index_add. Separated indexed dims are permuted to the front first.
//
// index_put: the storage offset of every written element is computed (an
// int64 tensor of the indexed shape) and the values are scattered into the
// storage as a flat array: one backend call whatever the layout, so writes
// through slices and steps land in self itself.
//
// Out-of-range indices: the CPU reports the index, its dim and size before
// anything is written. On CUDA the check would need a synchronisation, so a
// bad index becomes position -1 and the kernel (index_select, scatter)
// reports it from the device, as it does for its own bad indices.
#include <algorithm>
#include <limits>
#include <string_view>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/shape.h"
#include "core/ops/tensor_index.h"
#include "kernels/ops/index_kernels.h"

namespace anvil {

namespace indexing {
TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  ANVIL_CHECK(s != nullptr && std::string_view(s) == "...",
              "index: the only string index is \"...\" (Ellipsis), got \"", s ? s : "(null)", "\"");
}
}  // namespace indexing

namespace {

using indexing::TensorIndex;
using Kind = TensorIndex::Kind;
using Grads = std::vector<Tensor>;

struct Advanced {
  int64_t dim;  // in the view
  Tensor index;  // int64, as given (not yet broadcast)
};

struct Parsed {
  Tensor view;  // x after the basic indices
  std::vector<Advanced> adv;  // in increasing dim order
};

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

int64_t dims_consumed(const TensorIndex& i) {
  switch (i.kind()) {
    case Kind::Integer:
    case Kind::Slice:
      return 1;
    case Kind::Tensor:
      return i.tensor().defined() && is_mask(i.tensor()) ? i.tensor().dim() : 1;
    default:
      return 0;
  }
}

Tensor int64_on(const Tensor& x, std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return from_vector(values, {n}).to(x.device());
}

Parsed parse(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices) {
  int64_t consumed = 0;
  bool ellipsis = false;
  for (const TensorIndex& i : indices) {
    if (i.kind() == Kind::Ellipsis) {
      ANVIL_CHECK(!ellipsis, op, ": an index can have only one Ellipsis ('...')");
      ellipsis = true;
    }
    consumed += dims_consumed(i);
  }
  ANVIL_CHECK(consumed <= x.dim(), op, ": too many indices for a tensor of dimension ", x.dim(), " (", consumed,
              " dims indexed; input ", detail::describe(x), ")");
  Parsed p{x, {}};
  Tensor& v = p.view;
  int64_t d = 0;
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case Kind::None:
        v = v.unsqueeze(d++);
        break;
      case Kind::Ellipsis:
        d += x.dim() - consumed;
        break;
      case Kind::Integer: {
        const int64_t n = v.shape()[d], k = i.integer();
        ANVIL_CHECK(k >= -n && k < n, op, ": index ", k, " is out of range for dim ", d, " of size ", n, " (input ",
                    detail::describe(x), ")");
        v = v.select(d, k);
        break;
      }
      case Kind::Slice: {
        const indexing::Slice& s = i.slice();
        const int64_t step = s.step.value_or(1);
        ANVIL_CHECK(step > 0, op, ": slice step must be positive, got ", step, " (input ", detail::describe(x), ")");
        v = v.slice(d++, s.start.value_or(0), s.stop.value_or(std::numeric_limits<int64_t>::max()), step);
        break;
      }
      case Kind::Boolean:  // a new dim, indexed by [0] (true) or nothing (false): as PyTorch
        v = v.unsqueeze(d);
        p.adv.push_back({d++, int64_on(x, i.boolean() ? std::vector<int64_t>{0} : std::vector<int64_t>{})});
        break;
      case Kind::Tensor: {
        const Tensor& t = i.tensor();
        detail::check_defined(op, t, "index tensor");
        detail::check_same_device(op, {x, t});
        if (is_mask(t)) {
          Tensor m = t.detach();
          if (m.dtype() != kBool) m = ne(m, Scalar(0));
          if (m.dim() == 0) {  // a 0-d mask adds a dim, kept or emptied
            v = v.unsqueeze(d);
            m = m.reshape({1});
          }
          const int64_t k = m.dim();
          for (int64_t j = 0; j < k; ++j)
            ANVIL_CHECK(m.shape()[j] == v.shape()[d + j], op, ": the mask's shape ", t.shape(),
                        " does not match the indexed tensor's shape ", v.shape(), " at dims ", d, " to ", d + k - 1,
                        " (input ", detail::describe(x), ")");
          Tensor nz = nonzero(m);  // [n, k]
          for (int64_t j = 0; j < k; ++j) p.adv.push_back({d + j, nz.select(1, j)});
          d += k;
        } else {
          ANVIL_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32, op,
                      ": tensors used as indices must be int64, int32, bool or uint8, got ", detail::describe(t));
          p.adv.push_back({d++, t.detach().to(kInt64)});
        }
        break;
      }
    }
  }
  return p;
}

// The index tensors broadcast to one shape, negatives wrapped. On the CPU
// a bad index throws here; elsewhere `bad` (bool, B) marks them.
struct Prepared {
  Shape shape;  // B
  std::vector<Tensor> index;
  Tensor bad;
  std::vector<int64_t> dims;
  bool adjacent = true;
};

Prepared prepare(const char* op, const Tensor& x, const Parsed& p) {
  Prepared r;
  r.shape = p.adv[0].index.shape();
  for (const Advanced& a : p.adv) {
    r.shape = broadcast_shapes(r.shape, a.index.shape(), op);
    r.dims.push_back(a.dim);
  }
  r.adjacent = r.dims.back() - r.dims.front() + 1 == static_cast<int64_t>(r.dims.size());
  for (const Advanced& a : p.adv) {
    const int64_t n = p.view.shape()[a.dim];
    Tensor idx = a.index;
    bool negative = true;
    if (idx.device().is_cpu()) {
      Tensor dense = idx.contiguous();
      const int64_t* v = dense.data<int64_t>();
      negative = false;
      for (int64_t k = 0, m = dense.numel(); k < m; ++k) {
        ANVIL_CHECK(v[k] >= -n && v[k] < n, op, ": index ", v[k], " is out of range for dim ", a.dim, " of size ", n,
                    " (input ", detail::describe(x), ")");
        negative |= v[k] < 0;
      }
    }
    if (negative) idx = where(lt(idx, Scalar(0)), add(idx, Scalar(n)), idx);
    if (!idx.device().is_cpu()) {
      Tensor bad = logical_or(lt(idx, Scalar(0)), ge(idx, Scalar(n)));
      r.bad = r.bad.defined() ? logical_or(r.bad, bad) : bad;
    }
    r.index.push_back(idx.expand(r.shape));
  }
  if (r.bad.defined()) r.bad = r.bad.expand(r.shape);
  return r;
}

// sum_k index[k] * weight[k] (shape B); bad entries become -1.
Tensor combine(const Prepared& r, const std::vector<int64_t>& weights) {
  Tensor sum = mul(r.index[0], Scalar(weights[0]));
  for (size_t k = 1; k < r.index.size(); ++k) sum = add(sum, mul(r.index[k], Scalar(weights[k])));
  if (r.bad.defined()) sum = where(r.bad, Scalar(-1), sum);
  return sum;
}

// values of `from` broadcast to `to` without changing `to`.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

Shape cat_shapes(std::initializer_list<Shape> parts) {
  Shape s;
  for (const Shape& p : parts) s.insert(s.end(), p.begin(), p.end());
  return s;
}

Shape sub_shape(const Shape& s, int64_t from, int64_t to) { return Shape(s.begin() + from, s.begin() + to); }

Tensor advanced_index(const char* op, const Tensor& x, const Parsed& p) {
  const Prepared r = prepare(op, x, p);
  const Tensor& v = p.view;
  const int64_t k = static_cast<int64_t>(r.dims.size());
  std::vector<int64_t> group_sizes, weights(static_cast<size_t>(k));
  for (int64_t d : r.dims) group_sizes.push_back(v.shape()[d]);
  int64_t w = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    weights[j] = w;
    w *= group_sizes[j];
  }
  const Tensor linear = combine(r, weights).reshape({-1});
  if (r.adjacent) {
    const int64_t first = r.dims.front();
    const Tensor merged = k == 1 ? v : v.flatten(first, first + k - 1);
    const Shape shape = cat_shapes({sub_shape(v.shape(), 0, first), r.shape, sub_shape(v.shape(), first + k, v.dim())});
    return index_select(merged, first, linear).reshape(shape);
  }
  Shape perm(r.dims.begin(), r.dims.end()), rest;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end()) {
      perm.push_back(d);
      rest.push_back(v.shape()[d]);
    }
  const Tensor merged = v.permute(perm).flatten(0, k - 1);
  return index_select(merged, 0, linear).reshape(cat_shapes({r.shape, rest}));
}

// Where index_put writes: the storage offsets (relative to target's offset)
// of the indexed elements, in the shape the index result would have.
Tensor positions(const char* op, const Tensor& target, const Parsed& p) {
  const Tensor& v = p.view;
  const auto arange_along = [&](int64_t size, int64_t stride, int64_t at, int64_t rank) {
    Shape s(static_cast<size_t>(rank), 1);
    s[at] = size;
    return mul(arange(size, TensorOptions().dtype(kInt64).device(v.device())), Scalar(stride)).reshape(s);
  };
  Tensor pos = full({}, v.offset() - target.offset(), TensorOptions().dtype(kInt64).device(v.device()));
  if (p.adv.empty()) {
    for (int64_t d = 0; d < v.dim(); ++d) pos = add(pos, arange_along(v.shape()[d], v.strides()[d], d, v.dim()));
    return pos.expand(v.shape()).contiguous();
  }
  const Prepared r = prepare(op, target, p);
  std::vector<int64_t> strides;
  for (int64_t d : r.dims) strides.push_back(v.strides()[d]);
  Tensor group = combine(r, strides);
  const int64_t b = static_cast<int64_t>(r.shape.size());
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end()) kept.push_back(d);
  const int64_t rank = b + static_cast<int64_t>(kept.size());
  // Where B's dims go in the result, and where each kept dim goes.
  const int64_t b_at = r.adjacent ? r.dims.front() : 0;
  Shape shape, group_shape(static_cast<size_t>(rank), 1);
  for (int64_t j = 0; j < b; ++j) group_shape[b_at + j] = r.shape[j];
  int64_t at = 0;
  for (int64_t d : kept) {
    if (at == b_at) at += b;
    pos = add(pos, arange_along(v.shape()[d], v.strides()[d], at, rank));
    ++at;
  }
  pos = add(pos, group.reshape(group_shape));
  if (r.bad.defined()) pos = where(r.bad.reshape(group_shape), Scalar(-1), pos);
  // The result's shape: B at b_at among the kept dims.
  at = 0;
  for (int64_t d : kept) {
    if (at == b_at) shape.insert(shape.end(), r.shape.begin(), r.shape.end());
    shape.push_back(v.shape()[d]);
    ++at;
  }
  if (static_cast<int64_t>(shape.size()) < rank) shape.insert(shape.end(), r.shape.begin(), r.shape.end());
  return pos.expand(shape).contiguous();
}

// Writes values into target (no autograd) and returns the positions written
// (in the indexed shape) when asked, for the gradient.
Tensor put_into(const char* op, const Tensor& target, const std::vector<TensorIndex>& indices, Tensor values,
                bool accumulate, bool want_positions) {
  NoGradGuard no_grad;
  const Parsed p = parse(op, target, indices);
  if (!p.adv.empty())
    ANVIL_CHECK(values.dtype() == target.dtype(), op, ": expected values of self's dtype, got self ",
                detail::describe(target), " and values ", detail::describe(values));
  if (values.dtype() != target.dtype()) values = values.to(target.dtype());
  if (values.storage() == target.storage()) values = values.clone();  // read while target is written
  if (p.adv.empty() && !want_positions) {
    Tensor view = p.view;
    ANVIL_CHECK(broadcasts_to(values.shape(), view.shape()), op, ": values of shape ", values.shape(),
                " cannot be broadcast to the indexed shape ", view.shape());
    if (accumulate)
      add_(view, values);
    else
      view.copy_(values);
    return {};
  }
  Tensor pos = positions(op, target, p);
  const Shape shape = pos.shape();
  ANVIL_CHECK(broadcasts_to(values.shape(), shape), op, ": values of shape ", values.shape(),
              " cannot be broadcast to the indexed shape ", pos.shape());
  if (pos.numel() == 0) return pos;
  const Tensor flat_pos = pos.reshape({-1});
  const Tensor flat_values = values.expand(shape).contiguous().reshape({-1});
  const Tensor& v = p.view;
  int64_t extent = v.offset() - target.offset() + 1;
  for (int64_t d = 0; d < v.dim(); ++d) extent += (v.shape()[d] - 1) * v.strides()[d];
  if (v.numel() == 0) extent = 0;  // every index is out of range (the kernel says so)
  const Tensor flat = alias_with(target, {extent}, {1}, target.offset());
  detail::kernel_of<kernel::Scatter>(target)(flat.view_of(), 0, flat_pos.view_of(), flat_values.view_of(),
                                             accumulate ? ScatterReduce::Add : ScatterReduce::None);
  return pos;
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices) {
  const char* op = "index";
  detail::check_defined(op, x, "input");
  Parsed p = parse(op, x, indices);
  if (p.adv.empty()) return p.view;
  return advanced_index(op, x, p);
}

Tensor index_put(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  const char* op = "index_put";
  detail::check_defined(op, self, "self");
  detail::check_defined(op, values, "values");
  detail::check_same_device(op, {self, values});
  Tensor out = self.detach().clone();
  if (!autograd::needs_grad({self, values})) {
    put_into(op, out, indices, values.detach(), accumulate, false);
    return out;
  }
  // out is contiguous from offset 0, so the positions are also the flat
  // indices into the gradient.
  const Tensor indexed = put_into(op, out, indices, values.detach(), accumulate, true);
  const Shape indexed_shape = indexed.shape();
  const Tensor pos = indexed.reshape({-1});
  autograd::record(op, {self, values}, out,
                   [pos, indexed_shape, accumulate, values_shape = values.shape(),
                    need_values = values.requires_grad()](const Tensor& g) {
                     const Tensor flat = g.reshape({-1});
                     Tensor g_self =
                         accumulate || pos.numel() == 0 ? g : scatter(flat, 0, pos, Scalar(0)).reshape(g.shape());
                     Tensor g_values;
                     if (need_values)
                       g_values = sum_to(pos.numel() == 0 ? zeros(indexed_shape, g.options())
                                                          : index_select(flat, 0, pos).reshape(indexed_shape),
                                         values_shape);
                     return Grads{g_self, g_values};
                   });
  return out;
}

Tensor& index_put_(Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  const char* op = "index_put_";
  detail::check_defined(op, self, "self");
  detail::check_defined(op, values, "values");
  detail::check_same_device(op, {self, values});
  if (autograd::needs_grad({self, values})) {
    autograd::rebase_history(op, self, index_put(self, indices, values, accumulate));
    return self;
  }
  autograd::check_inplace(op, self);
  put_into(op, self.detach(), indices, values.detach(), accumulate, false);
  self.bump_version();
  return self;
}

Tensor& index_put_(Tensor& self, const std::vector<TensorIndex>& indices, const Scalar& value) {
  detail::check_defined("index_put_", self, "self");
  return index_put_(self, indices, scalar_tensor(value, self.options()), false);
}

}  // namespace anvil
