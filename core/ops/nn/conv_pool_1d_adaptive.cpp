// The 1-D forms of conv2d and the 2-D pools (a height of 1), and adaptive
// max pooling. Composed: conv2d and pool2d have kernels on every backend and
// a length-1 height costs them nothing.
#include <vector>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/indexing.h"
#include "core/ops/nn_functional.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

namespace {

// [N, C, L] (or [C, L]) -> [N, C, 1, L] (or [C, 1, L]).
Tensor with_unit_height(const char* op, const Tensor& x) {
  ANVIL_CHECK(x.defined() && (x.dim() == 2 || x.dim() == 3), op, ": expected input [N, C, L] or [C, L], got ",
              x.defined() ? detail::describe(x) : std::string("an undefined tensor"));
  return x.unsqueeze(-2);
}

// The 2-D pools check these too, but would name themselves and a [1, k]
// kernel; a 1-D caller should read its own op and numbers.
void check_pool1d(const char* op, const Tensor& x, const Pool1dOptions& o) {
  detail::check_floating(op, x, "input");
  ANVIL_CHECK(o.kernel > 0 && o.stride >= 0, op,
              ": kernel_size must be positive and stride non-negative "
              "(0 means the kernel size), got kernel_size ",
              o.kernel, ", stride ", o.stride);
  ANVIL_CHECK(o.padding >= 0 && 2 * o.padding <= o.kernel, op,
              ": padding must be between 0 and half the "
              "kernel size, got padding ",
              o.padding, " for kernel_size ", o.kernel);
  ANVIL_CHECK(x.size(-1) + 2 * o.padding >= o.kernel, op, ": input ", detail::describe(x), " with padding ", o.padding,
              " is shorter than kernel_size ", o.kernel, "; the output would be empty");
}

Pool2dOptions as_2d(const Pool1dOptions& o) {
  Pool2dOptions p;
  p.kernel = {1, o.kernel};
  p.stride = {1, o.stride == 0 ? o.kernel : o.stride};
  p.padding = {0, o.padding};
  p.count_include_pad = o.count_include_pad;
  p.ceil_mode = o.ceil_mode;
  return p;
}

// Adaptive windows along one dim: cell i covers [floor(i*in/out),
// ceil((i+1)*in/out)). Every window is gathered at the widest window's width
// (short ones repeat their last element, which changes no maximum) and
// reduced in one amax; index_select's gradient adds the repeats' shares back.
Tensor adaptive_max_along(const Tensor& x, int64_t dim, int64_t out) {
  const int64_t in = x.size(dim);
  if (in % out == 0) {
    Shape split = x.shape();
    split[dim] = out;
    split.insert(split.begin() + dim + 1, in / out);
    return amax(x.reshape(split), {dim + 1});
  }
  int64_t width = 0;
  for (int64_t i = 0; i < out; ++i) width = std::max(width, ((i + 1) * in + out - 1) / out - i * in / out);
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(out * width));
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
    for (int64_t j = 0; j < width; ++j) idx.push_back(std::min(start + j, end - 1));
  }
  Tensor windows = index_select(x, dim, from_vector<int64_t>(idx, {out * width}).to(x.device()));
  Shape split = x.shape();
  split[dim] = out;
  split.insert(split.begin() + dim + 1, width);
  return amax(windows.reshape(split), {dim + 1});
}

void check_adaptive(const char* op, const Tensor& x, int64_t spatial, std::initializer_list<int64_t> output_size) {
  ANVIL_CHECK(x.defined() && (x.dim() == spatial + 1 || x.dim() == spatial + 2), op, ": expected input ",
              spatial == 1 ? "[N, C, L] or [C, L]" : "[N, C, H, W] or [C, H, W]", ", got ",
              x.defined() ? detail::describe(x) : std::string("an undefined tensor"));
  detail::check_floating(op, x, "input");
  for (int64_t d = 0; d < spatial; ++d)
    ANVIL_CHECK(x.size(x.dim() - spatial + d) > 0, op, ": expected non-empty spatial dims, got ", detail::describe(x));
  for (int64_t s : output_size) ANVIL_CHECK(s > 0, op, ": expected a positive output_size, got ", s);
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& o) {
  Tensor x2 = with_unit_height("conv1d", x);
  ANVIL_CHECK(weight.defined() && weight.dim() == 3, "conv1d: expected weight [Cout, Cin/groups, k], got ",
              weight.defined() ? detail::describe(weight) : std::string("an undefined tensor"));
  Conv2dOptions o2;
  o2.stride = {1, o.stride};
  o2.padding = {0, o.padding};
  o2.dilation = {1, o.dilation};
  o2.groups = o.groups;
  return conv2d(x2, weight.unsqueeze(2), bias, o2).squeeze(-2);
}

Tensor max_pool1d(const Tensor& x, const Pool1dOptions& o) {
  Tensor x2 = with_unit_height("max_pool1d", x);
  check_pool1d("max_pool1d", x, o);
  return max_pool2d(x2, as_2d(o)).squeeze(-2);
}

Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& o) {
  Tensor x2 = with_unit_height("avg_pool1d", x);
  check_pool1d("avg_pool1d", x, o);
  return avg_pool2d(x2, as_2d(o)).squeeze(-2);
}

Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size) {
  check_adaptive("adaptive_max_pool1d", x, 1, {output_size});
  return adaptive_max_along(x, x.dim() - 1, output_size);
}

// The windows are rectangles, so the max over one is the max over its rows
// of the max over its columns.
Tensor adaptive_max_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
  check_adaptive("adaptive_max_pool2d", x, 2, {output_size[0], output_size[1]});
  return adaptive_max_along(adaptive_max_along(x, x.dim() - 2, output_size[0]), x.dim() - 1, output_size[1]);
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  check_adaptive("adaptive_avg_pool1d", x, 1, {output_size});
  const int64_t in = x.size(-1), dim = x.dim() - 1;
  // The mean over a window is the mean of its gathered elements when the
  // windows have one width; otherwise one narrow + mean per cell.
  if (in % output_size == 0) {
    Shape split = x.shape();
    split[dim] = output_size;
    split.push_back(in / output_size);
    return mean(x.reshape(split), {dim + 1});
  }
  std::vector<Tensor> cells;
  for (int64_t i = 0; i < output_size; ++i) {
    const int64_t start = i * in / output_size, end = ((i + 1) * in + output_size - 1) / output_size;
    cells.push_back(mean(x.narrow(dim, start, end - start), {dim}, true));
  }
  return cat(cells, dim);
}

}  // namespace anvil
