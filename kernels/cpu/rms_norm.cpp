// RMS norm over the last dim of [rows, cols] (the forward; its gradient is
// composed from elementwise ops and reductions in core/ops/nn/norm_more.cpp).
// Accumulates in double, as layer_norm (float32: the vector kernel's float
// lanes, vector_math.h); rstd is saved as float32 per row.
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kParallelRmsNormElems = 1 << 14;

template <typename T>
void rms_norm_typed(const View& out_view, const View& rstd_view, const View& in_view, const View* weight,
                    const shapes::RowLayout& l, double eps) {
  const DenseIn<T> x(in_view);
  if constexpr (std::is_same_v<T, float>) {
    if (vec::enabled() && l.cols > 0) {
      const std::vector<float> wf = weight ? dense_copy<float>(*weight) : std::vector<float>{};
      std::vector<float> rstd(static_cast<size_t>(l.rows));
      DenseOut<float> out(out_view);
#pragma omp parallel for schedule(static) if (l.rows * l.cols > kParallelRmsNormElems)
      for (int64_t i = 0; i < l.rows; ++i)
        rstd[i] = static_cast<float>(vec::rms_norm_row(out.get() + i * l.cols, x.get() + i * l.cols,
                                                       weight ? wf.data() : nullptr, l.cols, eps));
      out.commit();
      scatter_dense(rstd_view, rstd.data());
      return;
    }
  }
  const std::vector<double> w = weight ? dense_copy<double>(*weight) : std::vector<double>(l.cols, 1.0);
  std::vector<float> rstd(static_cast<size_t>(l.rows));
  DenseOut<T> out(out_view);
#pragma omp parallel for schedule(static) if (l.rows * l.cols > kParallelRmsNormElems)
  for (int64_t i = 0; i < l.rows; ++i) {
    const T* src = x.get() + i * l.cols;
    T* dst = out.get() + i * l.cols;
    double sq = 0;
    for (int64_t j = 0; j < l.cols; ++j) sq += static_cast<double>(src[j]) * static_cast<double>(src[j]);
    const double r = 1.0 / std::sqrt((l.cols > 0 ? sq / static_cast<double>(l.cols) : 0.0) + eps);
    for (int64_t j = 0; j < l.cols; ++j) dst[j] = static_cast<T>(static_cast<double>(src[j]) * r * w[j]);
    rstd[i] = static_cast<float>(r);
  }
  out.commit();
  scatter_dense(rstd_view, rstd.data());
}

}  // namespace

void CpuBackend::rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) {
  const shapes::RowLayout l = shapes::check_rms_norm(out, rstd, in, weight);
  dispatch_floating("rms_norm", in.dtype,
                    [&](auto tag) { rms_norm_typed<decltype(tag)>(out, rstd, in, weight, l, eps); });
}

}  // namespace anvil::cpu
