// Softmax and log-softmax over any dim. The softmax dim becomes a "row" read
// with its own stride; a StridedLoop walks the other dims, one row per element.
// Rows with unit stride (the last dim of a contiguous tensor) take a
// compile-time unit-stride path; float32 ones the vector kernels
// (vector_math.h: float lanes, the exp vectorised). Otherwise math is in float
// (double for float64) with the row sums accumulated in double.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/softmax_loss_kernels.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/vector_math.h"

namespace anvil::cpu {
namespace {

template <typename T> using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <bool kUnit> int64_t at(int64_t i, int64_t stride) { return kUnit ? i : i * stride; }

// y = softmax(x) (or log_softmax), subtracting the row max so exp never overflows.
template <typename T, bool kUnit> void softmax_row(T* y, int64_t sy, const T* x, int64_t sx, int64_t n, bool log) {
  using C = compute_t<T>;
  C mx = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const C v = C(x[at<kUnit>(i, sx)]);
    mx = v > mx ? v : mx;
  }
  double sum = 0;
  if (log) {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(C(x[at<kUnit>(i, sx)]) - mx);
    // (x - max) - log(sum), not x - (max + log(sum)): large logits keep their precision.
    const C log_sum = C(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[at<kUnit>(i, sy)] = T((C(x[at<kUnit>(i, sx)]) - mx) - log_sum);
  } else if constexpr (std::is_same_v<T, C>) {  // keep the exps in y, then scale
    for (int64_t i = 0; i < n; ++i) {
      const C e = std::exp(x[at<kUnit>(i, sx)] - mx);
      y[at<kUnit>(i, sy)] = e;
      sum += e;
    }
    const C inv = C(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[at<kUnit>(i, sy)] *= inv;
  } else {  // 16-bit output: recompute the exps rather than round them twice
    for (int64_t i = 0; i < n; ++i) sum += std::exp(C(x[at<kUnit>(i, sx)]) - mx);
    const C inv = C(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[at<kUnit>(i, sy)] = T(std::exp(C(x[at<kUnit>(i, sx)]) - mx) * inv);
  }
}

// softmax:     grad_in = y * (g - sum(g * y))
// log_softmax: grad_in = g - exp(y) * sum(g)
template <typename T, bool kUnit>
void softmax_backward_row(T* gi, int64_t sgi, const T* g, int64_t sg, const T* y, int64_t sy, int64_t n, bool log) {
  using C = compute_t<T>;
  double sum = 0;
  if (log) {
    for (int64_t i = 0; i < n; ++i) sum += C(g[at<kUnit>(i, sg)]);
    const C s = C(sum);
    for (int64_t i = 0; i < n; ++i)
      gi[at<kUnit>(i, sgi)] = T(C(g[at<kUnit>(i, sg)]) - std::exp(C(y[at<kUnit>(i, sy)])) * s);
  } else {
    for (int64_t i = 0; i < n; ++i) sum += C(g[at<kUnit>(i, sg)]) * C(y[at<kUnit>(i, sy)]);
    const C dot = C(sum);
    for (int64_t i = 0; i < n; ++i) gi[at<kUnit>(i, sgi)] = T(C(y[at<kUnit>(i, sy)]) * (C(g[at<kUnit>(i, sg)]) - dot));
  }
}

View without_dim(const View& v, int64_t dim) {
  View r = v;
  r.shape.erase(r.shape.begin() + dim);
  r.strides.erase(r.strides.begin() + dim);
  return r;
}

int64_t checked_dim(const char* op, int64_t dim, const View& v) {
  const int64_t rank = v.dim();
  ANVIL_CHECK(dim >= -rank && dim < std::max<int64_t>(rank, 1), op, ": dim ", dim, " out of range for shape ", v.shape);
  return dim < 0 ? dim + rank : dim;
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// A loop's byte stride between float32 rows, in floats.
int64_t floats(int64_t byte_stride) { return byte_stride / static_cast<int64_t>(sizeof(float)); }

// Rough cost of one element (an exp and a few passes) for the parallel threshold.
constexpr int64_t kCostPerElement = 8;

}  // namespace

void softmax(const View& out, const View& in, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  ANVIL_CHECK(out.shape == in.shape, name, ": output shape ", out.shape, " differs from input shape ", in.shape);
  ANVIL_CHECK(out.dtype == in.dtype, name, ": output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  if (in.dim() == 0) {  // a scalar is a row of one
    return softmax(View{out.data, out.dtype, {1}, {1}}, View{in.data, in.dtype, {1}, {1}}, 0, log);
  }
  dim = checked_dim(name, dim, in);
  if (in.numel() == 0) return;
  const int64_t n = in.shape[dim], sy = out.strides[dim], sx = in.strides[dim];
  const View out_rows = without_dim(out, dim), in_rows = without_dim(in, dim);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!is_float_v<T>) {
      fail(name, ": not supported for dtype ", in.dtype, " (floating dtypes only)");
    } else {
      const bool vector = std::is_same_v<T, float> && sy == 1 && sx == 1 && vec::enabled();
      const bool stream = vector && out.data != in.data && vec::stream_rows(out.numel(), n);  // not in place
      StridedLoop<2> rows({&out_rows, &in_rows});
      rows.run_parallel(
          {static_cast<char*>(out.data), static_cast<char*>(in.data)},
          [&](const StridedLoop<2>::Run& r) {
            if constexpr (std::is_same_v<T, float>) {
              if (vector) {
                vec::softmax_rows(reinterpret_cast<float*>(r.ptr[0]), floats(r.stride[0]),
                                  reinterpret_cast<const float*>(r.ptr[1]), floats(r.stride[1]), r.n, n, log, stream);
                return;
              }
            }
            for (int64_t j = 0; j < r.n; ++j) {
              T* y = reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]);
              const T* x = reinterpret_cast<const T*>(r.ptr[1] + j * r.stride[1]);
              if (sy == 1 && sx == 1)
                softmax_row<T, true>(y, 1, x, 1, n, log);
              else
                softmax_row<T, false>(y, sy, x, sx, n, log);
            }
          },
          n * kCostPerElement);
    }
  });
}

void softmax_backward(const View& grad_in, const View& grad_out, const View& out, int64_t dim, bool log) {
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  ANVIL_CHECK(grad_in.shape == out.shape && grad_out.shape == out.shape, name, ": shapes differ: grad_in ",
              grad_in.shape, ", grad_out ", grad_out.shape, ", out ", out.shape);
  ANVIL_CHECK(grad_in.dtype == out.dtype && grad_out.dtype == out.dtype, name, ": dtypes differ: grad_in ",
              grad_in.dtype, ", grad_out ", grad_out.dtype, ", out ", out.dtype);
  if (out.dim() == 0) {
    auto row = [](const View& v) { return View{v.data, v.dtype, {1}, {1}}; };
    return softmax_backward(row(grad_in), row(grad_out), row(out), 0, log);
  }
  dim = checked_dim(name, dim, out);
  if (out.numel() == 0) return;
  const int64_t n = out.shape[dim], sgi = grad_in.strides[dim], sg = grad_out.strides[dim], sy = out.strides[dim];
  const View gi_rows = without_dim(grad_in, dim), g_rows = without_dim(grad_out, dim), y_rows = without_dim(out, dim);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!is_float_v<T>) {
      fail(name, ": not supported for dtype ", out.dtype, " (floating dtypes only)");
    } else {
      const bool vector = std::is_same_v<T, float> && sgi == 1 && sg == 1 && sy == 1 && vec::enabled();
      const bool stream = vector && grad_in.data != grad_out.data && vec::stream_rows(grad_in.numel(), n);
      StridedLoop<3> rows({&gi_rows, &g_rows, &y_rows});
      rows.run_parallel(
          {static_cast<char*>(grad_in.data), static_cast<char*>(grad_out.data), static_cast<char*>(out.data)},
          [&](const StridedLoop<3>::Run& r) {
            if constexpr (std::is_same_v<T, float>) {
              if (vector) {
                vec::softmax_backward_rows(reinterpret_cast<float*>(r.ptr[0]), floats(r.stride[0]),
                                           reinterpret_cast<const float*>(r.ptr[1]), floats(r.stride[1]),
                                           reinterpret_cast<const float*>(r.ptr[2]), floats(r.stride[2]), r.n, n, log,
                                           stream);
                return;
              }
            }
            for (int64_t j = 0; j < r.n; ++j) {
              T* gi = reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]);
              const T* g = reinterpret_cast<const T*>(r.ptr[1] + j * r.stride[1]);
              const T* y = reinterpret_cast<const T*>(r.ptr[2] + j * r.stride[2]);
              if (sgi == 1 && sg == 1 && sy == 1)
                softmax_backward_row<T, true>(gi, 1, g, 1, y, 1, n, log);
              else
                softmax_backward_row<T, false>(gi, sgi, g, sg, y, sy, n, log);
            }
          },
          n * kCostPerElement);
    }
  });
}

ANVIL_REGISTER_KERNEL(kernel::Softmax, CPU, softmax);
ANVIL_REGISTER_KERNEL(kernel::SoftmaxBackward, CPU, softmax_backward);

}  // namespace anvil::cpu
