// conv2d as im2col + GEMM. The column matrix of an image is
// [Cin/groups * kH * kW, Ho * Wo], so the output of a group is
// W_g [Cout/groups, Cin/groups*kH*kW] @ col; a chunk of images shares one
// GEMM (see images_per_chunk). The GEMMs use OpenBLAS's threads (never BLAS
// inside an OpenMP region); im2col/col2im use OpenMP only where that does not
// take cores from them (see blas_threads.h).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/blas_threads.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/shapes/geometry.h"

namespace anvil::cpu {
namespace {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// Below this many column-matrix elements im2col/col2im stay on one thread.
constexpr int64_t kParallelColElems = 1 << 14;

using shapes::ConvGeometry;
using shapes::conv_geometry;

int64_t ceil_div(int64_t a, int64_t b) {  // b > 0, any sign of a
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// Output columns [lo, hi) whose input column ow*sw - pw + kj*dw lies in [0, w).
void valid_output_cols(const ConvGeometry& g, int64_t kj, int64_t& lo, int64_t& hi) {
  const int64_t shift = kj * g.dw - g.pw;
  lo = std::clamp<int64_t>(ceil_div(-shift, g.sw), 0, g.wo);
  hi = std::clamp<int64_t>(ceil_div(g.w - shift, g.sw), lo, g.wo);
}

// Row r = (c, ki, kj) of an image's column matrix:
// col_row[oh*wo + ow] = img[c, ih, iw], zero where (ih, iw) falls in the padding.
template <typename T>
void im2col_row(const T* img, T* col_row, const ConvGeometry& g, int64_t r) {
  const int64_t kk = g.kh * g.kw, c = r / kk, ki = (r / g.kw) % g.kh, kj = r % g.kw;
  const T* plane = img + c * g.h * g.w;
  int64_t lo, hi;
  valid_output_cols(g, kj, lo, hi);
  const int64_t iw0 = kj * g.dw - g.pw;
  T* dst = col_row;
  for (int64_t oh = 0; oh < g.ho; ++oh, dst += g.wo) {
    const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
    if (ih < 0 || ih >= g.h) {
      std::fill(dst, dst + g.wo, T(0));
      continue;
    }
    const T* src = plane + ih * g.w;
    std::fill(dst, dst + lo, T(0));
    if (g.sw == 1) {
      if (hi > lo) std::copy(src + iw0 + lo, src + iw0 + hi, dst + lo);
    } else {
      for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[iw0 + ow * g.sw];
    }
    std::fill(dst + hi, dst + g.wo, T(0));
  }
}

// The inverse scatter for channel c: plane = sum of the column entries that
// im2col read from each pixel (zero for pixels no window covers). The
// channel's rows start at col and lie ld elements apart.
template <typename T>
void col2im_channel(const T* col, int64_t ld, T* plane, const ConvGeometry& g, int64_t c) {
  const int64_t kk = g.kh * g.kw;
  std::fill(plane, plane + g.h * g.w, T(0));
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const T* src = col + (c * kk + ki * g.kw + kj) * ld;
      int64_t lo, hi;
      valid_output_cols(g, kj, lo, hi);
      const int64_t iw0 = kj * g.dw - g.pw;
      for (int64_t oh = 0; oh < g.ho; ++oh, src += g.wo) {
        const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        T* dst = plane + ih * g.w;
        for (int64_t ow = lo; ow < hi; ++ow) dst[iw0 + ow * g.sw] += src[ow];
      }
    }
  }
}

// The kernels work on chunks of images of one group at a time and do ONE
// GEMM per chunk: the chunk's column matrices sit side by side in a
// [rows, count * cols] matrix (image j's columns start at column j * cols),
// so W_g [cout_g, rows] @ col gives every image's output at once. One large
// GEMM keeps OpenBLAS's threads busy where one small GEMM per image spent
// much of its time starting them and packing the same weights again. The
// price is a copy between that [cout_g, count * cols] result and NCHW.
//
// Chunks bound the column matrix to kColChunkElems elements (32 MiB in float).
constexpr int64_t kColChunkElems = int64_t{1} << 23;

int64_t images_per_chunk(const ConvGeometry& g) {
  const int64_t per_image = std::max<int64_t>(g.col_rows() * g.col_cols(), 1);
  return std::clamp<int64_t>(kColChunkElems / per_image, 1, std::max<int64_t>(g.n, 1));
}

// Scratch memory that is written before it is read: no zero-fill.
template <typename T>
std::unique_ptr<T[]> scratch(int64_t elems) {
  return std::unique_ptr<T[]>(new T[static_cast<size_t>(std::max<int64_t>(elems, 1))]);
}

// Where group gi of image n starts in a dense NCHW tensor with `channels_per_group` channels per group.
template <typename T>
T* group_plane(T* base, const ConvGeometry& g, int64_t n, int64_t gi, int64_t channels_per_group, int64_t plane) {
  return base + ((n * g.groups + gi) * channels_per_group) * plane;
}

// col [rows, count * cols] <- the column matrices of images n0 .. n0+count-1, group gi.
template <typename T>
void im2col_chunk(const T* in, T* col, const ConvGeometry& g, int64_t gi, int64_t n0, int64_t count) {
  const int64_t rows = g.col_rows(), cols = g.col_cols(), ld = count * cols, total = count * rows;
#pragma omp parallel for schedule(static) if (use_openmp_beside_blas() && total * cols > kParallelColElems)
  for (int64_t t = 0; t < total; ++t) {
    const int64_t j = t / rows, r = t % rows;
    im2col_row(group_plane(in, g, n0 + j, gi, g.cin_per_group(), g.h * g.w), col + r * ld + j * cols, g, r);
  }
}

// Copies between a [cout_g, count * cols] chunk matrix and the NCHW output-side tensor (group gi).
enum class Direction { ToNchw, FromNchw };
template <typename T>
void exchange_output_chunk(T* chunk, T* nchw, const ConvGeometry& g, int64_t gi, int64_t n0, int64_t count,
                           Direction dir) {
  const int64_t cout_g = g.cout_per_group(), cols = g.col_cols(), ld = count * cols;
#pragma omp parallel for schedule(static) if (use_openmp_beside_blas() && count * cout_g * cols > kParallelColElems)
  for (int64_t t = 0; t < count * cout_g; ++t) {
    const int64_t j = t / cout_g, co = t % cout_g;
    T* image_row = group_plane(nchw, g, n0 + j, gi, cout_g, cols) + co * cols;
    T* chunk_row = chunk + co * ld + j * cols;
    if (dir == Direction::ToNchw) std::copy(chunk_row, chunk_row + cols, image_row);
    else std::copy(image_row, image_row + cols, chunk_row);
  }
}

template <typename T>
void conv2d_forward(const View& out_view, const View& in_view, const View& weight_view, const View* bias_view,
                    const ConvGeometry& g) {
  const DenseIn<T> in(in_view), weight(weight_view);
  DenseOut<T> out(out_view);
  std::vector<T> bias;
  if (bias_view) bias = dense_copy<T>(*bias_view);
  const int64_t rows = g.col_rows(), cols = g.col_cols(), cout_g = g.cout_per_group(), chunk = images_per_chunk(g);
  auto col = scratch<T>(chunk * rows * cols);
  auto result = scratch<T>(chunk * cout_g * cols);
  for (int64_t gi = 0; gi < g.groups; ++gi) {
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t count = std::min(chunk, g.n - n0), ld = count * cols;
      im2col_chunk(in.get(), col.get(), g, gi, n0, count);
      if (!bias.empty()) {
        for (int64_t co = 0; co < cout_g; ++co)
          std::fill(result.get() + co * ld, result.get() + (co + 1) * ld, bias[gi * cout_g + co]);
      }
      gemm(false, false, cout_g, ld, rows, weight.get() + gi * g.weight_group_elems(), rows, col.get(), ld,
           bias.empty() ? T(0) : T(1), result.get(), ld);
      exchange_output_chunk(result.get(), out.get(), g, gi, n0, count, Direction::ToNchw);
    }
  }
  out.commit();
}

template <typename T>
void conv2d_grad_input(const View& grad_in_view, const View& grad_out_view, const View& weight_view,
                       const ConvGeometry& g) {
  const DenseIn<T> grad_out(grad_out_view), weight(weight_view);
  DenseOut<T> grad_in(grad_in_view);
  const int64_t rows = g.col_rows(), cols = g.col_cols(), cout_g = g.cout_per_group(), chunk = images_per_chunk(g);
  const int64_t cin_g = g.cin_per_group(), plane = g.h * g.w;
  auto col = scratch<T>(chunk * rows * cols);
  auto gathered = scratch<T>(chunk * cout_g * cols);
  for (int64_t gi = 0; gi < g.groups; ++gi) {
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t count = std::min(chunk, g.n - n0), ld = count * cols;
      exchange_output_chunk(gathered.get(), const_cast<T*>(grad_out.get()), g, gi, n0, count, Direction::FromNchw);
      // col = W_g^T @ grad_out_g
      gemm(true, false, rows, ld, cout_g, weight.get() + gi * g.weight_group_elems(), rows, gathered.get(), ld,
           T(0), col.get(), ld);
#pragma omp parallel for schedule(static) if (use_openmp_beside_blas() && count * rows * cols > kParallelColElems)
      for (int64_t t = 0; t < count * cin_g; ++t) {
        const int64_t j = t / cin_g, c = t % cin_g;
        col2im_channel(col.get() + j * cols, ld, group_plane(grad_in.get(), g, n0 + j, gi, cin_g, plane) + c * plane,
                       g, c);
      }
    }
  }
  grad_in.commit();
}

template <typename T>
void conv2d_grad_weight(const View& grad_weight_view, const View& grad_out_view, const View& in_view,
                        const ConvGeometry& g) {
  const DenseIn<T> grad_out(grad_out_view), in(in_view);
  DenseOut<T> grad_weight(grad_weight_view);
  if (g.n == 0) std::fill(grad_weight.get(), grad_weight.get() + grad_weight_view.numel(), T(0));
  const int64_t rows = g.col_rows(), cols = g.col_cols(), cout_g = g.cout_per_group(), chunk = images_per_chunk(g);
  auto col = scratch<T>(chunk * rows * cols);
  auto gathered = scratch<T>(chunk * cout_g * cols);
  for (int64_t gi = 0; gi < g.groups; ++gi) {
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t count = std::min(chunk, g.n - n0), ld = count * cols;
      im2col_chunk(in.get(), col.get(), g, gi, n0, count);
      exchange_output_chunk(gathered.get(), const_cast<T*>(grad_out.get()), g, gi, n0, count, Direction::FromNchw);
      // grad_W_g (+)= grad_out_g @ col^T, summed over the chunk's images by the
      // GEMM itself; the first chunk overwrites.
      gemm(false, true, cout_g, rows, ld, gathered.get(), ld, col.get(), ld, n0 == 0 ? T(0) : T(1),
           grad_weight.get() + gi * g.weight_group_elems(), rows);
    }
  }
  grad_weight.commit();
}

}  // namespace

void CpuBackend::conv2d(const View& out, const View& in, const View& weight, const View* bias,
                        const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry("conv2d", in.shape, weight.shape, out.shape, p);
  ANVIL_CHECK(!bias || (bias->dim() == 1 && bias->shape[0] == g.cout), "conv2d: bias must have shape [",
              g.cout, "], got ", bias ? bias->shape : Shape{});
  dispatch_floating("conv2d", out.dtype, [&](auto tag) {
    conv2d_forward<decltype(tag)>(out, in, weight, bias, g);
  });
}

void CpuBackend::conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight,
                                       const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry("conv2d_backward_input", grad_in.shape, weight.shape, grad_out.shape, p);
  dispatch_floating("conv2d_backward_input", grad_in.dtype, [&](auto tag) {
    conv2d_grad_input<decltype(tag)>(grad_in, grad_out, weight, g);
  });
}

void CpuBackend::conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in,
                                        const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry("conv2d_backward_weight", in.shape, grad_weight.shape, grad_out.shape, p);
  dispatch_floating("conv2d_backward_weight", grad_weight.dtype, [&](auto tag) {
    conv2d_grad_weight<decltype(tag)>(grad_weight, grad_out, in, g);
  });
}

}  // namespace anvil::cpu
