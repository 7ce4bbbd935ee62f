// RMS norm over the last dim of [rows, cols], forward and backward.
// Accumulates in double, as layer_norm (float32: the vector kernel's float
// lanes, vector_math.h); rstd is saved as float32 per row. The backward
// recomputes each row's rstd from the input the same way (so float64 stays
// exact, which the saved float32 would not be), then grad_in row by row and
// grad_weight's column sums in column blocks, each block one thread's.
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kParallelRmsNormElems = 1 << 14;
// parallel_for's cost per element that puts its threshold at kParallelRmsNormElems elements.
constexpr int64_t kRmsNormCostPerElement = kParallelGrain / kParallelRmsNormElems;

template <typename T>
void rms_norm_typed(const View& out_view, const View& rstd_view, const View& in_view, const View* weight,
                    const shapes::RowLayout& l, double eps) {
  const DenseIn<T> x(in_view);
  if constexpr (std::is_same_v<T, float>) {
    if (vec::enabled() && l.cols > 0) {
      const std::vector<float> wf = weight ? dense_copy<float>(*weight) : std::vector<float>{};
      const Scratch<float> rstd(dense_copy_memory(), l.rows);  // cached, not zeroed and faulted in each call
      DenseOut<float> out(out_view);
      const bool stream = !out.staged() && out.get() != x.get() && vec::stream_rows(l.rows * l.cols, l.cols);
      parallel_for(l.rows, l.rows * l.cols * kRmsNormCostPerElement, [&](int64_t begin, int64_t end) {
        vec::rms_norm_rows(out.get() + begin * l.cols, x.get() + begin * l.cols, end - begin, l.cols,
                           weight ? wf.data() : nullptr, eps, rstd.get() + begin, stream);
      });
      out.commit();
      scatter_dense(rstd_view, rstd.get());
      return;
    }
  }
  const std::vector<double> w = weight ? dense_copy<double>(*weight) : std::vector<double>(l.cols, 1.0);
  const Scratch<float> rstd(dense_copy_memory(), l.rows);
  DenseOut<T> out(out_view);
#pragma omp parallel for schedule(static) if (l.rows * l.cols > kParallelRmsNormElems)
  for (int64_t i = 0; i < l.rows; ++i) {
    const T* src = x.get() + i * l.cols;
    T* dst = out.get() + i * l.cols;
    double sq = 0;
    for (int64_t j = 0; j < l.cols; ++j) sq += static_cast<double>(src[j]) * static_cast<double>(src[j]);
    const double r = 1.0 / std::sqrt((l.cols > 0 ? sq / static_cast<double>(l.cols) : 0.0) + eps);
    for (int64_t j = 0; j < l.cols; ++j) dst[j] = static_cast<T>(static_cast<double>(src[j]) * r * w[j]);
    rstd.get()[i] = static_cast<float>(r);
  }
  out.commit();
  scatter_dense(rstd_view, rstd.get());
}

template <typename T>
void rms_norm_backward_typed(const View& grad_in_view, const View* grad_weight, const View& grad_out_view,
                             const View& in_view, const View* weight, const shapes::RowLayout& l, double eps) {
  const DenseIn<T> x(in_view), g(grad_out_view);
  const bool want_grad_in = grad_in_view.data != nullptr;
  const Scratch<double> rstd_scratch(dense_copy_memory(), l.rows);  // cached, not zeroed and faulted in each call
  double* rstd = rstd_scratch.get();
  const int64_t cols = l.cols;
  bool done = false;
  if constexpr (std::is_same_v<T, float>) {
    if (vec::enabled() && cols > 0) {
      const std::vector<float> wf = weight ? dense_copy<float>(*weight) : std::vector<float>{};
      std::optional<DenseOut<float>> grad_in;
      if (want_grad_in) grad_in.emplace(grad_in_view);
      const bool stream =
          grad_in && !grad_in->staged() && grad_in->get() != g.get() && vec::stream_rows(l.rows * cols, cols);
      parallel_for(l.rows, l.rows * cols * kRmsNormCostPerElement, [&](int64_t begin, int64_t end) {
        vec::rms_norm_backward_rows(grad_in ? grad_in->get() + begin * cols : nullptr, g.get() + begin * cols,
                                    x.get() + begin * cols, end - begin, cols, weight ? wf.data() : nullptr, eps,
                                    rstd + begin, stream);
      });
      if (grad_in) grad_in->commit();
      done = true;
    }
  }
  if (!done) {
    const std::vector<double> w = weight ? dense_copy<double>(*weight) : std::vector<double>(cols, 1.0);
    std::optional<DenseOut<T>> grad_in;
    if (want_grad_in) grad_in.emplace(grad_in_view);
#pragma omp parallel for schedule(static) if (l.rows * cols > kParallelRmsNormElems)
    for (int64_t i = 0; i < l.rows; ++i) {
      const T* xr = x.get() + i * cols;
      const T* gr = g.get() + i * cols;
      double sq = 0, dot = 0;
      for (int64_t j = 0; j < cols; ++j) {
        const double xv = static_cast<double>(xr[j]);
        sq += xv * xv;
        dot += static_cast<double>(gr[j]) * w[j] * xv;
      }
      const double n = static_cast<double>(std::max<int64_t>(cols, 1));
      const double r = 1.0 / std::sqrt(sq / n + eps), c = r * r * r * dot / n;
      rstd[i] = r;
      if (!grad_in) continue;
      T* dst = grad_in->get() + i * cols;
      for (int64_t j = 0; j < cols; ++j)
        dst[j] = static_cast<T>(r * static_cast<double>(gr[j]) * w[j] - static_cast<double>(xr[j]) * c);
    }
    if (grad_in) grad_in->commit();
  }
  if (!grad_weight) return;
  // sum over rows of g * x * rstd: threads own blocks of columns, so no two
  // write one sum and the result does not depend on the thread count.
  std::vector<double> gw(static_cast<size_t>(cols), 0.0);
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (l.rows * cols > kParallelRmsNormElems)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kBlock, j1 = std::min(cols, j0 + kBlock);
    for (int64_t i = 0; i < l.rows; ++i) {
      const T* xr = x.get() + i * cols;
      const T* gr = g.get() + i * cols;
      for (int64_t j = j0; j < j1; ++j) gw[j] += static_cast<double>(gr[j]) * static_cast<double>(xr[j]) * rstd[i];
    }
  }
  scatter_dense(*grad_weight, gw.data());
}

}  // namespace

void rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                       const View* weight, double eps) {
  const shapes::RowLayout l = shapes::check_rms_norm_backward(grad_in, grad_weight, grad_out, in, weight);
  dispatch_floating("rms_norm_backward", in.dtype, [&](auto tag) {
    rms_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_out, in, weight, l, eps);
  });
}

void rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) {
  const shapes::RowLayout l = shapes::check_rms_norm(out, rstd, in, weight);
  dispatch_floating("rms_norm", in.dtype,
                    [&](auto tag) { rms_norm_typed<decltype(tag)>(out, rstd, in, weight, l, eps); });
}

ANVIL_REGISTER_KERNEL(kernel::RmsNorm, CPU, rms_norm);
ANVIL_REGISTER_KERNEL(kernel::RmsNormBackward, CPU, rms_norm_backward);

}  // namespace anvil::cpu
