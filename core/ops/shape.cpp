// Joining (cat, stack) and splitting (split, chunk). Splits are narrow()
// views; cat copies each input into a narrow() of its output.
#include "core/ops/shape.h"

#include <numeric>

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"

namespace anvil {

using Grads = std::vector<Tensor>;

namespace {

// PyTorch's legacy rule: a 1-D empty tensor joins any cat and is ignored.
bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  ANVIL_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  DType dtype = kBool;
  size_t ref = tensors.size();  // first tensor that takes part
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    ANVIL_CHECK(t.defined(), "cat: tensor ", i, " is an undefined tensor");
    dtype = i == 0 ? t.dtype() : promote(dtype, t.dtype());
    ANVIL_CHECK(t.device() == tensors[0].device(), "cat: expected all tensors on the same device, got tensor 0 on ",
                tensors[0].device(), " and tensor ", i, " on ", t.device(), " (move them with .to(device))");
    ANVIL_CHECK(t.dim() > 0, "cat: zero-dimensional tensor (at position ", i,
                ") cannot be concatenated; unsqueeze it or use stack");
    if (ref == tensors.size() && !skipped_by_cat(t)) ref = i;
  }
  if (ref == tensors.size()) return empty({0}, tensors[0].options().dtype(dtype));

  const Tensor& first = tensors[ref];
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped_by_cat(t)) continue;
    ANVIL_CHECK(t.dim() == first.dim(), "cat: tensors must have the same number of dims: tensor ", ref, " has shape ",
                first.shape(), " but tensor ", i, " has shape ", t.shape());
    for (int64_t k = 0; k < t.dim(); ++k)
      ANVIL_CHECK(k == d || t.shape()[k] == first.shape()[k], "cat: sizes must match except in dim ", d, ": tensor ",
                  ref, " has shape ", first.shape(), " but tensor ", i, " has shape ", t.shape());
    shape[d] += t.shape()[d];
  }

  Tensor out = empty(shape, first.options().dtype(dtype));
  std::vector<int64_t> offsets(tensors.size(), 0);
  {
    NoGradGuard no_grad;
    int64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      offsets[i] = offset;
      if (skipped_by_cat(t)) continue;
      const int64_t length = t.shape()[d];
      if (t.numel() > 0) detail::runtime_of(out).copy(out.narrow(d, offset, length).view_of(), t.view_of());
      offset += length;
    }
  }

  if (autograd::needs_grad(tensors)) {
    struct Part {
      int64_t offset, length;
      DType dtype;
      bool wanted;
    };
    std::vector<Part> parts;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      bool wanted = t.requires_grad() && !skipped_by_cat(t);
      parts.push_back({offsets[i], wanted ? t.shape()[d] : 0, t.dtype(), wanted});
    }
    autograd::record("cat", tensors, out, [parts, d](const Tensor& g) {
      Grads r(parts.size());
      for (size_t i = 0; i < parts.size(); ++i)
        if (parts[i].wanted) r[i] = g.narrow(d, parts[i].offset, parts[i].length).to(parts[i].dtype);
      return r;
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  ANVIL_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    ANVIL_CHECK(tensors[i].defined(), "stack: tensor ", i, " is an undefined tensor");
    ANVIL_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: expected tensors of equal shape, but tensor 0 has ",
                "shape ", tensors[0].shape(), " and tensor ", i, " has shape ", tensors[i].shape());
  }
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

namespace {

int64_t split_dim(const char* op, const Tensor& x, int64_t dim) {
  detail::check_defined(op, x, "input");
  ANVIL_CHECK(x.dim() > 0, op, ": cannot split a 0-d tensor");
  return wrap_dim(dim, x.dim(), op);
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  const int64_t d = split_dim("split", x, dim);
  const int64_t n = x.shape()[d];
  ANVIL_CHECK(split_size >= 0, "split: split_size must be non-negative, got ", split_size);
  ANVIL_CHECK(split_size > 0 || n == 0, "split: split_size can only be 0 when dim ", d, " has size 0 (input shape ",
              x.shape(), ")");
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t start = i * split_size;
    out.push_back(x.narrow(d, start, std::min(split_size, n - start)));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  const int64_t d = split_dim("split", x, dim);
  const int64_t n = x.shape()[d];
  for (int64_t s : sizes) ANVIL_CHECK(s >= 0, "split: sizes must be non-negative, got ", sizes);
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  ANVIL_CHECK(total == n, "split: sizes ", sizes, " sum to ", total, " but dim ", d, " has size ", n, " (input shape ",
              x.shape(), ")");
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  ANVIL_CHECK(chunks > 0, "chunk: expected a positive number of chunks, got ", chunks);
  const int64_t d = split_dim("chunk", x, dim);
  const int64_t n = x.shape()[d];
  // Like PyTorch: pieces of ceil(n / chunks), so fewer than `chunks` may come
  // back; an empty dim gives `chunks` empty pieces.
  if (n == 0) return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

}  // namespace anvil
