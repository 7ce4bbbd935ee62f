// Views: new shape/strides/offset over the same storage. Each records a
// backward that maps the gradient back to the base's geometry.
#include <algorithm>
#include <numeric>

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape.h"

namespace anvil {

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dim 0 and -1
  ANVIL_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " is out of range for a tensor with ", ndim, " dims (expected ",
              -n, " to ", n - 1, ")");
  return dim < 0 ? dim + n : dim;
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

namespace {

Tensor make_view(const char* op, const Tensor& base, Shape shape, Shape strides, int64_t offset,
                 autograd::FunctionNode::Backward backward) {
  Tensor out = alias_with(base, std::move(shape), std::move(strides), offset);
  out.impl()->is_view = true;
  if (autograd::needs_grad({base})) {
    autograd::record(op, {base}, out, std::move(backward));
    autograd::meta(out).is_view = true;
  }
  return out;
}

// Shape with one -1 filled in so that it holds numel elements.
Shape infer_shape(const char* op, const Shape& requested, int64_t numel) {
  Shape shape = requested;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      ANVIL_CHECK(infer_at < 0, op, ": only one dimension can be -1, got ", requested);
      infer_at = static_cast<int64_t>(i);
    } else {
      ANVIL_CHECK(shape[i] >= 0, op, ": invalid size ", shape[i], " in shape ", requested);
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    ANVIL_CHECK(known != 0 && numel % known == 0, op, ": shape ", requested, " is invalid for ", numel, " elements");
    shape[infer_at] = numel / known;
  }
  ANVIL_CHECK(numel_of(shape) == numel, op, ": shape ", requested, " is invalid for ", numel, " elements");
  return shape;
}

// Strides that view `old` (shape/strides) as `shape`, or empty if the memory
// layout does not allow it without a copy (the algorithm PyTorch uses: walk
// groups of old dims that are contiguous with each other).
Shape view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& shape) {
  if (numel_of(old_shape) == 0) return contiguous_strides(shape);
  if (old_shape.empty()) return contiguous_strides(shape);  // a 0-d tensor is one element: any all-ones shape fits
  Shape strides(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return {};
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return {};
  return strides;
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  Shape shape = infer_shape("view", requested, numel());
  Shape strides = view_strides(this->shape(), this->strides(), shape);
  ANVIL_CHECK(!strides.empty() || shape.empty(), "view: cannot view a tensor of shape ", shape_str(), " and strides ",
              this->strides(), " as ", shape, " without copying; use reshape()");
  Shape in_shape = this->shape();
  return make_view("view", *this, shape, strides, offset(),
                   [in_shape](const Tensor& g) { return std::vector<Tensor>{g.reshape(in_shape)}; });
}

Tensor Tensor::reshape(const Shape& requested) const {
  Shape shape = infer_shape("reshape", requested, numel());
  Shape strides = view_strides(this->shape(), this->strides(), shape);
  if (!strides.empty() || shape.empty()) return view(shape);
  // A view of a fresh copy that nothing else sees: in-place writes into it are
  // as safe as into any new tensor.
  Tensor out = contiguous().view(shape);
  out.impl()->is_view = false;
  if (auto* m = autograd::meta_if(out)) m->is_view = false;
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  if (dim() == 0) return *this;
  Shape shape = this->shape(), strides = this->strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  return make_view("transpose", *this, shape, strides, offset(),
                   [d0, d1](const Tensor& g) { return std::vector<Tensor>{g.transpose(d0, d1)}; });
}

Tensor Tensor::t() const {
  ANVIL_CHECK(dim() <= 2, "t: expects a tensor with at most 2 dims, got shape ", shape_str(),
              "; use transpose(d0, d1) or permute");
  if (dim() == 2) return transpose(0, 1);
  return make_view("t", *this, shape(), strides(), offset(), [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor Tensor::permute(const Shape& dims) const {
  ANVIL_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: got ", dims.size(), " dims ", dims,
              " for a tensor with ", dim(), " dims");
  Shape shape(dims.size()), strides(dims.size()), inverse(dims.size());
  std::vector<bool> used(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    ANVIL_CHECK(!used[d], "permute: dim ", d, " appears twice in ", dims);
    used[d] = true;
    shape[i] = this->shape()[d];
    strides[i] = this->strides()[d];
    inverse[d] = static_cast<int64_t>(i);
  }
  return make_view("permute", *this, shape, strides, offset(),
                   [inverse](const Tensor& g) { return std::vector<Tensor>{g.permute(inverse)}; });
}

Tensor Tensor::squeeze() const {
  Shape shape, strides;
  for (int64_t d = 0; d < dim(); ++d)
    if (this->shape()[d] != 1) {
      shape.push_back(this->shape()[d]);
      strides.push_back(this->strides()[d]);
    }
  Shape in_shape = this->shape();
  return make_view("squeeze", *this, shape, strides, offset(),
                   [in_shape](const Tensor& g) { return std::vector<Tensor>{g.reshape(in_shape)}; });
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return *this;
  d = wrap_dim(d, dim(), "squeeze");
  if (shape()[d] != 1) return *this;
  Shape shape = this->shape(), strides = this->strides();
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  Shape in_shape = this->shape();
  return make_view("squeeze", *this, shape, strides, offset(),
                   [in_shape](const Tensor& g) { return std::vector<Tensor>{g.reshape(in_shape)}; });
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape = this->shape(), strides = this->strides();
  int64_t stride = d < dim() ? strides[d] * shape[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return make_view("unsqueeze", *this, shape, strides, offset(),
                   [d](const Tensor& g) { return std::vector<Tensor>{g.squeeze(d)}; });
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  ANVIL_CHECK(start <= end, "flatten: start dim ", start, " is after end dim ", end);
  Shape shape(this->shape().begin(), this->shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= this->shape()[d];
  shape.push_back(merged);
  shape.insert(shape.end(), this->shape().begin() + end + 1, this->shape().end());
  return reshape(shape);
}

Tensor Tensor::expand(const Shape& requested) const {
  ANVIL_CHECK(static_cast<int64_t>(requested.size()) >= dim(), "expand: target shape ", requested,
              " has fewer dims than the tensor's shape ", shape_str());
  size_t lead = requested.size() - shape().size();
  Shape shape(requested.size()), strides(requested.size());
  for (size_t i = 0; i < requested.size(); ++i) {
    if (i < lead) {
      ANVIL_CHECK(requested[i] >= 0, "expand: cannot use -1 for a new leading dim in ", requested);
      shape[i] = requested[i];
      strides[i] = 0;
      continue;
    }
    int64_t have = this->shape()[i - lead], want = requested[i] == -1 ? have : requested[i];
    ANVIL_CHECK(want >= 0, "expand: invalid size ", requested[i], " at dim ", i, " in ", requested,
                " (sizes must be non-negative, or -1 to keep a dim)");
    ANVIL_CHECK(have == want || have == 1, "expand: size ", have, " at dim ", i - lead, " of shape ", shape_str(),
                " cannot expand to ", requested, " (only size-1 dims expand)");
    shape[i] = want;
    strides[i] = have == want ? this->strides()[i - lead] : 0;
  }
  if (shape == this->shape()) return *this;
  Shape in_shape = this->shape();
  return make_view("expand", *this, shape, strides, offset(),
                   [in_shape](const Tensor& g) { return std::vector<Tensor>{sum_to(g, in_shape)}; });
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  ANVIL_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = this->shape(), strides = this->strides();
  shape[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  int64_t off = offset() + start * this->strides()[d];
  Shape in_shape = this->shape();
  Device dev = device();
  return make_view("slice", *this, shape, strides, off, [=](const Tensor& g) {
    Tensor full_grad = zeros(in_shape, TensorOptions().dtype(g.dtype()).device(dev));
    {
      // An in-place copy into a view of full_grad would give only the view the
      // history; under create_graph full_grad itself is recorded below.
      NoGradGuard no_grad;
      full_grad.slice(d, start, end, step).copy_(g);
    }
    if (autograd::needs_grad({g}))
      autograd::record("slice_backward", {g}, full_grad,
                       [=](const Tensor& gg) { return std::vector<Tensor>{gg.slice(d, start, end, step)}; });
    return std::vector<Tensor>{full_grad};
  });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  int64_t n = shape()[d];
  if (start < 0) start += n;
  ANVIL_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: start ", start, " and length ", length,
              " are out of range for dim ", d, " of size ", n, " (shape ", shape_str(), ")");
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  ANVIL_CHECK(dim() > 0, "select: cannot index a 0-d tensor");
  int64_t n = shape()[d];
  ANVIL_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dim ", d, " of size ", n,
              " (shape ", shape_str(), ")");
  if (index < 0) index += n;
  return narrow(d, index, 1).squeeze(d);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }
Tensor permute(const Tensor& x, const Shape& dims) { return x.permute(dims); }
Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
Tensor flatten(const Tensor& x, int64_t start, int64_t end) { return x.flatten(start, end); }

}  // namespace anvil
