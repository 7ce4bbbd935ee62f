// conv2d as im2col + GEMM, one image at a time; float32 (and float16/bfloat16,
// computed in float32) goes to oneDNN's primitives instead when anvil has
// them (onednn_conv.h). This path is the reference and the float64 path.
//
// The im2col path: The column matrix of an
// image and group is [Cin/groups * kH * kW, Ho * Wo], so the group's output
// W_g [Cout/groups, Cin/groups*kH*kW] @ col is already its slice of the NCHW
// output: the GEMM writes the result in place, with no layout copy.
//
// Images are spread over OpenMP threads, each with its own column matrix
// (a few hundred KiB for typical layers, so it is still in L2 when the GEMM
// reads it) and a single-threaded GEMM: OpenBLAS's OpenMP build runs
// single-threaded inside a parallel region. Where that does not pay (fewer
// images than threads, an OpenBLAS with its own pthread pool that OpenMP
// threads would fight, see blas_threads.h, or column matrices too large to
// keep one per thread), images go one after the other and each GEMM uses
// BLAS's threads.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/blas_threads.h"
#include "kernels/kernel_registry.h"
#include "kernels/runtime.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/parallel_if.h"
#include "kernels/cpu/scratch.h"
#include "kernels/shapes/geometry.h"

namespace anvil::cpu {
namespace {

// Below this many column-matrix elements (all images together) a call stays
// on one thread.
constexpr int64_t kParallelColElems = 1 << 14;

using shapes::conv_geometry;
using shapes::ConvGeometry;

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
template <typename T> void im2col_row(const T* img, T* col_row, const ConvGeometry& g, int64_t r) {
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
template <typename T> void col2im_channel(const T* col, int64_t ld, T* plane, const ConvGeometry& g, int64_t c) {
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

// Per-thread column matrices beyond this many elements (32 MiB in float, all
// threads together) make images go one at a time instead.
constexpr int64_t kColScratchElems = int64_t{1} << 23;

// How the images of a call are spread: `threads` OpenMP threads (1: none,
// BLAS threads the GEMMs instead), each with its own scratch matrix.
struct ImagePlan {
  int threads = 1;
  bool parallel() const { return threads > 1; }
};

ImagePlan plan_images(const ConvGeometry& g) {
  ImagePlan plan;
  const int max_threads = omp_get_max_threads();
  const int64_t col_elems = g.col_rows() * g.col_cols();
  if (max_threads > 1 && use_openmp_beside_blas() && g.n >= max_threads && g.n * col_elems >= kParallelColElems &&
      max_threads * col_elems <= kColScratchElems)
    plan.threads = max_threads;
  return plan;
}

// Where group gi of image n starts in a dense NCHW tensor with `channels_per_group` channels per group.
template <typename T>
T* group_plane(T* base, const ConvGeometry& g, int64_t n, int64_t gi, int64_t channels_per_group, int64_t plane) {
  return base + ((n * g.groups + gi) * channels_per_group) * plane;
}

// A 1x1 kernel with unit stride and no padding reads every input pixel once,
// in order: the input planes are the column matrix.
bool input_is_col(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// The column matrix of image n, group gi: the input itself where it already
// is one, else written into col.
template <typename T> const T* image_col(const T* in, T* col, const ConvGeometry& g, int64_t n, int64_t gi) {
  const T* planes = group_plane(in, g, n, gi, g.cin_per_group(), g.h * g.w);
  if (input_is_col(g)) return planes;
  const int64_t rows = g.col_rows(), cols = g.col_cols();
  for (int64_t r = 0; r < rows; ++r) im2col_row(planes, col + r * cols, g, r);
  return col;
}

// Calls body(n, gi, col, thread) for every image n and group gi, the images
// spread over threads as the plan says; col is the thread's own column-matrix
// scratch (part of cols_of_threads), thread its number.
template <typename T, typename Body>
void for_each_image_and_group(const ConvGeometry& g, const ImagePlan& plan, const Scratch<T>& cols_of_threads,
                              Body&& body) {
  const int64_t col_elems = g.col_rows() * g.col_cols();
  parallel_if(plan.parallel(), plan.threads, [&] {
    const int thread = omp_get_thread_num();
    T* col = cols_of_threads.get() + thread * col_elems;
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t gi = 0; gi < g.groups; ++gi) body(n, gi, col, thread);
  });
}

template <typename T>
void conv2d_forward(const View& out_view, const View& in_view, const View& weight_view, const View* bias_view,
                    const ConvGeometry& g, Allocator& scratch_memory) {
  const DenseIn<T> in(in_view), weight(weight_view);
  DenseOut<T> out(out_view);
  std::vector<T> bias;
  if (bias_view) bias = dense_copy<T>(*bias_view);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn::conv2d_runs_on_onednn(g)) {
      onednn::conv2d_forward(out.get(), in.get(), weight.get(), bias.empty() ? nullptr : bias.data(), g);
      out.commit();
      return;
    }
  }
  const int64_t rows = g.col_rows(), cols = g.col_cols(), cout_g = g.cout_per_group();
  const ImagePlan plan = plan_images(g);
  const Scratch<T> cols_of_threads(scratch_memory, plan.threads * rows * cols);
  for_each_image_and_group(g, plan, cols_of_threads, [&](int64_t n, int64_t gi, T* col, int) {
    T* dst = group_plane(out.get(), g, n, gi, cout_g, cols);
    if (!bias.empty()) {
      for (int64_t co = 0; co < cout_g; ++co) std::fill(dst + co * cols, dst + (co + 1) * cols, bias[gi * cout_g + co]);
    }
    gemm(false, false, cout_g, cols, rows, T(1), weight.get() + gi * g.weight_group_elems(), rows,
         image_col(in.get(), col, g, n, gi), cols, bias.empty() ? T(0) : T(1), dst, cols);
  });
  out.commit();
}

template <typename T>
void conv2d_grad_input(const View& grad_in_view, const View& grad_out_view, const View& weight_view,
                       const ConvGeometry& g, Allocator& scratch_memory) {
  const DenseIn<T> grad_out(grad_out_view), weight(weight_view);
  DenseOut<T> grad_in(grad_in_view);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn::conv2d_runs_on_onednn(g)) {
      onednn::conv2d_backward_input(grad_in.get(), grad_out.get(), weight.get(), g);
      grad_in.commit();
      return;
    }
  }
  const int64_t rows = g.col_rows(), cols = g.col_cols(), cout_g = g.cout_per_group();
  const int64_t cin_g = g.cin_per_group(), plane = g.h * g.w;
  const ImagePlan plan = plan_images(g);
  const Scratch<T> cols_of_threads(scratch_memory, plan.threads * rows * cols);
  for_each_image_and_group(g, plan, cols_of_threads, [&](int64_t n, int64_t gi, T* col, int) {
    T* planes = group_plane(grad_in.get(), g, n, gi, cin_g, plane);
    // col = W_g^T @ grad_out of (n, gi): the gradient of the column matrix,
    // which col2im sums back onto the pixels it was read from. Where the
    // input is its own column matrix that sum is the identity.
    T* dst = input_is_col(g) ? planes : col;
    gemm(true, false, rows, cols, cout_g, T(1), weight.get() + gi * g.weight_group_elems(), rows,
         group_plane(grad_out.get(), g, n, gi, cout_g, cols), cols, T(0), dst, cols);
    if (dst == col)
      for (int64_t c = 0; c < cin_g; ++c) col2im_channel(col, cols, planes + c * plane, g, c);
  });
  grad_in.commit();
}

template <typename T>
void conv2d_grad_weight(const View& grad_weight_view, const View& grad_out_view, const View& in_view,
                        const ConvGeometry& g, Allocator& scratch_memory) {
  const DenseIn<T> grad_out(grad_out_view), in(in_view);
  DenseOut<T> grad_weight(grad_weight_view);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn::conv2d_runs_on_onednn(g)) {
      onednn::conv2d_backward_weight(grad_weight.get(), grad_out.get(), in.get(), g);
      grad_weight.commit();
      return;
    }
  }
  const int64_t rows = g.col_rows(), cols = g.col_cols(), cout_g = g.cout_per_group();
  const int64_t weight_elems = g.groups * g.weight_group_elems();
  const ImagePlan plan = plan_images(g);
  const Scratch<T> cols_of_threads(scratch_memory, plan.threads * rows * cols);
  // Each thread sums its images' gradients into its own buffer (the first
  // thread into grad_weight itself); the buffers are added up at the end.
  const Scratch<T> sums_of_other_threads(scratch_memory, (plan.threads - 1) * weight_elems);
  std::fill(grad_weight.get(), grad_weight.get() + weight_elems, T(0));
  std::fill(sums_of_other_threads.get(), sums_of_other_threads.get() + (plan.threads - 1) * weight_elems, T(0));
  for_each_image_and_group(g, plan, cols_of_threads, [&](int64_t n, int64_t gi, T* col, int thread) {
    T* sum = thread == 0 ? grad_weight.get() : sums_of_other_threads.get() + (thread - 1) * weight_elems;
    // grad_W_g += grad_out of (n, gi) @ col^T
    gemm(false, true, cout_g, rows, cols, T(1), group_plane(grad_out.get(), g, n, gi, cout_g, cols), cols,
         image_col(in.get(), col, g, n, gi), cols, T(1), sum + gi * g.weight_group_elems(), rows);
  });
  for (int t = 1; t < plan.threads; ++t) {
    const T* partial = sums_of_other_threads.get() + (t - 1) * weight_elems;
    for (int64_t i = 0; i < weight_elems; ++i) grad_weight.get()[i] += partial[i];
  }
  grad_weight.commit();
}

}  // namespace

void conv2d(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry(in.shape, weight.shape, out.shape, bias, p);
  dispatch_floating("conv2d", out.dtype, [&](auto tag) {
    conv2d_forward<decltype(tag)>(out, in, weight, bias, g, runtime_for(DeviceType::CPU).allocator(0));
  });
}

void conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight, const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry("conv2d_backward_input", grad_in.shape, weight.shape, grad_out.shape, p);
  dispatch_floating("conv2d_backward_input", grad_in.dtype, [&](auto tag) {
    conv2d_grad_input<decltype(tag)>(grad_in, grad_out, weight, g, runtime_for(DeviceType::CPU).allocator(0));
  });
}

void conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in, const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry("conv2d_backward_weight", in.shape, grad_weight.shape, grad_out.shape, p);
  dispatch_floating("conv2d_backward_weight", grad_weight.dtype, [&](auto tag) {
    conv2d_grad_weight<decltype(tag)>(grad_weight, grad_out, in, g, runtime_for(DeviceType::CPU).allocator(0));
  });
}

ANVIL_REGISTER_KERNEL(kernel::Conv2d, CPU, conv2d);
ANVIL_REGISTER_KERNEL(kernel::Conv2dBackwardInput, CPU, conv2d_backward_input);
ANVIL_REGISTER_KERNEL(kernel::Conv2dBackwardWeight, CPU, conv2d_backward_weight);

}  // namespace anvil::cpu
