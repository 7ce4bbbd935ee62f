// pad and interpolate, composed from views, cat and index_select: every
// output element is a copy of (or a weighted sum of two) input elements, so
// a gather with an index computed on the host is the whole kernel, and its
// gradient (index_add) sums the copies back, as PyTorch's dedicated kernels do.
#include <cmath>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/nn_functional.h"
#include "core/ops/shape.h"

namespace anvil {

namespace {

const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "?";
}

Tensor index_on(const std::vector<int64_t>& idx, const Tensor& like) {
  return from_vector<int64_t>(idx, {static_cast<int64_t>(idx.size())}).to(like.device());
}

// Source position of each output position along one dim of size n padded by
// (before, after) in a non-constant mode.
std::vector<int64_t> pad_source_index(PadMode mode, int64_t n, int64_t before, int64_t after) {
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(n + before + after));
  for (int64_t o = -before; o < n + after; ++o) {
    int64_t i = o;
    if (mode == PadMode::Replicate) {
      i = std::min(std::max(o, int64_t{0}), n - 1);
    } else if (mode == PadMode::Reflect) {
      if (i < 0) i = -i;
      if (i >= n) i = 2 * (n - 1) - i;
    } else {  // Circular
      i = ((o % n) + n) % n;
    }
    idx.push_back(i);
  }
  return idx;
}

Tensor constant_pad_dim(const Tensor& x, int64_t dim, int64_t before, int64_t after, double value) {
  Tensor y = x;
  // Negative amounts crop.
  if (before < 0 || after < 0) {
    const int64_t start = before < 0 ? -before : 0, stop = y.size(dim) + (after < 0 ? after : 0);
    y = y.narrow(dim, start, std::max<int64_t>(stop - start, 0));
  }
  std::vector<Tensor> parts;
  auto block = [&](int64_t n) {
    Shape s = y.shape();
    s[dim] = n;
    return full(s, value, y.options());
  };
  if (before > 0) parts.push_back(block(before));
  parts.push_back(y);
  if (after > 0) parts.push_back(block(after));
  return parts.size() == 1 ? y : cat(parts, dim);
}

}  // namespace

Tensor pad(const Tensor& x, const Shape& amounts, PadMode mode, double value) {
  ANVIL_CHECK(x.defined(), "pad: expected a defined input tensor");
  const int64_t pairs = static_cast<int64_t>(amounts.size()) / 2;
  ANVIL_CHECK(amounts.size() % 2 == 0 && pairs <= x.dim(), "pad: expected an even number of amounts ((before, after) ",
              "per dim, last dim first) covering at most the ", x.dim(), " dims of input ", detail::describe(x),
              ", got ", amounts);
  if (mode != PadMode::Constant) {
    ANVIL_CHECK(pairs <= x.dim() - 1 || x.dim() == 1, "pad: ", pad_mode_name(mode), " padding of input ",
                detail::describe(x), " with ", amounts,
                " would pad its batch dim; PyTorch pads at most dim() - 1 dims");
  }
  Tensor y = x;
  for (int64_t k = 0; k < pairs; ++k) {
    const int64_t dim = x.dim() - 1 - k, before = amounts[2 * k], after = amounts[2 * k + 1];
    const int64_t n = y.size(dim);
    if (mode == PadMode::Constant) {
      ANVIL_CHECK(n + before + after >= 0, "pad: amounts ", amounts, " crop dim ", dim, " of input ",
                  detail::describe(x), " below size 0");
      if (before != 0 || after != 0) y = constant_pad_dim(y, dim, before, after, value);
      continue;
    }
    ANVIL_CHECK(before >= 0 && after >= 0, "pad: ", pad_mode_name(mode), " padding needs non-negative amounts, got ",
                amounts, " for input ", detail::describe(x));
    const bool fits = mode == PadMode::Reflect    ? before < n && after < n
                      : mode == PadMode::Circular ? before <= n && after <= n
                                                  : n > 0;
    ANVIL_CHECK(fits, "pad: ", pad_mode_name(mode), " padding (", before, ", ", after, ") of dim ", dim, " of input ",
                detail::describe(x), " needs ",
                mode == PadMode::Reflect    ? "each amount < the dim's size"
                : mode == PadMode::Circular ? "each amount <= the dim's size"
                                            : "a non-empty dim");
    if (before == 0 && after == 0) continue;
    y = index_select(y, dim, index_on(pad_source_index(mode, n, before, after), y));
  }
  return y;
}

namespace {

InterpolateMode check_interpolate_args(const Tensor& x, const InterpolateOptions& o, std::vector<int64_t>& out_size,
                                       std::vector<double>& scales) {
  detail::check_floating("interpolate", x, "input");
  const int64_t spatial = x.dim() - 2;
  const bool linear = o.mode != InterpolateMode::Nearest;
  const int64_t want = o.mode == InterpolateMode::Linear ? 1 : o.mode == InterpolateMode::Bilinear ? 2 : 0;
  ANVIL_CHECK(linear ? x.dim() == want + 2 : (spatial >= 1 && spatial <= 3), "interpolate: ",
              o.mode == InterpolateMode::Linear ? "linear mode expects input [N, C, L]"
              : o.mode == InterpolateMode::Bilinear
                  ? "bilinear mode expects input [N, C, H, W]"
                  : "nearest mode expects input [N, C, L], [N, C, H, W] or [N, C, D, H, W]",
              ", got ", detail::describe(x));
  ANVIL_CHECK(o.size.empty() != o.scale_factor.empty(), "interpolate: give exactly one of size and scale_factor, got ",
              o.size.size(), " sizes and ", o.scale_factor.size(), " scale factors");
  ANVIL_CHECK(!o.align_corners.has_value() || linear,
              "interpolate: align_corners applies to linear and bilinear modes only, not nearest");
  const size_t given = o.size.empty() ? o.scale_factor.size() : o.size.size();
  ANVIL_CHECK(given == 1 || given == static_cast<size_t>(spatial), "interpolate: expected 1 or ", spatial,
              " output sizes or scale factors for input ", detail::describe(x), ", got ", given);
  out_size.assign(static_cast<size_t>(spatial), 0);
  scales.assign(static_cast<size_t>(spatial), 0.0);  // 0: none given (use in/out)
  for (int64_t d = 0; d < spatial; ++d) {
    const size_t k = given == 1 ? 0 : static_cast<size_t>(d);
    const int64_t in = x.size(2 + d);
    if (!o.size.empty()) {
      out_size[d] = o.size[k];
    } else {
      ANVIL_CHECK(o.scale_factor[k] > 0, "interpolate: expected positive scale factors, got ", o.scale_factor[k]);
      scales[d] = o.scale_factor[k];
      out_size[d] = static_cast<int64_t>(std::floor(static_cast<double>(in) * o.scale_factor[k]));
    }
    ANVIL_CHECK(out_size[d] > 0 && in > 0, "interpolate: input ", detail::describe(x), " and output size ", out_size[d],
                " of spatial dim ", d, " must both be non-empty");
  }
  return o.mode;
}

// Nearest: output o reads input min(floor(o * scale), in - 1), the scale in
// float as PyTorch computes it (so the chosen rows match its exactly).
Tensor nearest_along(const Tensor& x, int64_t dim, int64_t out, double scale_factor) {
  const int64_t in = x.size(dim);
  const float scale =
      scale_factor > 0 ? static_cast<float>(1.0 / scale_factor) : static_cast<float>(in) / static_cast<float>(out);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o)
    idx[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
  return index_select(x, dim, index_on(idx, x));
}

// Linear along one dim: x[i0] * (1 - w) + x[i1] * w with PyTorch's source
// coordinate (half-pixel centres unless align_corners).
Tensor linear_along(const Tensor& x, int64_t dim, int64_t out, double scale_factor, bool align_corners) {
  const int64_t in = x.size(dim);
  double scale;
  if (align_corners) {
    scale = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  } else {
    scale = scale_factor > 0 ? 1.0 / scale_factor : static_cast<double>(in) / static_cast<double>(out);
  }
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
  std::vector<double> w(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double src = align_corners ? scale * static_cast<double>(o) : scale * (static_cast<double>(o) + 0.5) - 0.5;
    if (src < 0) src = 0;
    const int64_t lo = std::min(static_cast<int64_t>(src), in - 1);
    i0[o] = lo;
    i1[o] = std::min(lo + 1, in - 1);
    w[o] = src - static_cast<double>(lo);
  }
  Shape wshape(static_cast<size_t>(x.dim()), 1);
  wshape[dim] = out;
  Tensor weight = from_vector<double>(w, {out}).to(x.device(), x.dtype()).reshape(wshape);
  Tensor a = index_select(x, dim, index_on(i0, x)), b = index_select(x, dim, index_on(i1, x));
  return a + (b - a) * weight;
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  std::vector<int64_t> out_size;
  std::vector<double> scales;
  check_interpolate_args(x, o, out_size, scales);
  Tensor y = x;
  for (size_t d = 0; d < out_size.size(); ++d) {
    const int64_t dim = 2 + static_cast<int64_t>(d);
    if (o.mode == InterpolateMode::Nearest) {
      if (out_size[d] != x.size(dim) || scales[d] > 0) y = nearest_along(y, dim, out_size[d], scales[d]);
    } else {
      y = linear_along(y, dim, out_size[d], scales[d], o.align_corners.value_or(false));
    }
  }
  return y;
}

}  // namespace anvil
