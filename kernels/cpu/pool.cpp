// Max and average 2-D pooling over the last two dims, one OpenMP task per
// (N, C) plane. Max pooling ignores padded positions (they act as -inf); the
// backward pass finds each window's argmax again from the input (first
// maximum in row-major window order, NaN wins) instead of saving indices; the
// 2x2 path compares with the forward's output, which holds the maximum.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <cmath>
#include <limits>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/shapes/geometry.h"

namespace anvil::cpu {
namespace {

using shapes::pool_geometry;
using shapes::PoolGeometry;

// The clipped input window [h0, h1) x [w0, w1) of output (oh, ow) and the
// divisor average pooling uses for it.
struct Window {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

Window window_at(const PoolGeometry& g, int64_t oh, int64_t ow) {
  Window win;
  win.h0 = oh * g.sh - g.ph;
  win.w0 = ow * g.sw - g.pw;
  win.h1 = std::min(win.h0 + g.kh, g.h + g.ph);
  win.w1 = std::min(win.w0 + g.kw, g.w + g.pw);
  const int64_t padded_size = (win.h1 - win.h0) * (win.w1 - win.w0);
  win.h0 = std::max<int64_t>(win.h0, 0);
  win.w0 = std::max<int64_t>(win.w0, 0);
  win.h1 = std::min(win.h1, g.h);
  win.w1 = std::min(win.w1, g.w);
  win.divisor = g.count_include_pad ? padded_size : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

// Windows that tile the input exactly (kernel == stride, no padding, the
// common 2x2/2 max pool): each input element belongs to at most one window,
// so the backward pass writes grad_in directly instead of zero-fill plus
// scatter, and neither pass needs the clipped-window arithmetic.
bool windows_tile(const PoolGeometry& g) {
  return g.kh == g.sh && g.kw == g.sw && g.ph == 0 && g.pw == 0 && g.ho * g.kh <= g.h && g.wo * g.kw <= g.w;
}

// The tiling path avoids data-dependent branches (which element wins is a
// coin flip per window, and mispredicted branches made max pooling a fifth of
// a CNN training step): the maximum is a chain of selects plus a NaN flag,
// and the winner is the first element equal to it, found the same way.
template <typename T> struct TileMax {
  T value;
  bool is_nan;
};

// KH/KW: the kernel size when known at compile time (the 2x2 case, fully
// unrolled), 0 to read it from g.
template <typename T, int KH, int KW>
inline TileMax<T> tile_max(const T* plane, const PoolGeometry& g, int64_t oh, int64_t ow) {
  const int64_t kh = KH ? KH : g.kh, kw = KW ? KW : g.kw;
  const T* first = plane + oh * kh * g.w + ow * kw;
  T m = first[0];
  bool any_nan = false;
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      const T v = first[i * g.w + j];
      m = m < v ? v : m;  // keeps the first of equal values, as the general path does
      any_nan |= v != v;
    }
  }
  return {any_nan ? std::numeric_limits<T>::quiet_NaN() : m, any_nan};
}

// Index (within the plane) of the first maximum of window (oh, ow) of a
// tiling geometry. The maximum is the value of the window's first largest
// element, so that element is the first one with the same bits; comparing
// bits as integers (rather than floats, which compile to branches) keeps the
// loop branch-free, and treats -0.0 and +0.0 apart as the first-maximum rule needs.
template <typename T, int KH, int KW>
inline int64_t tile_argmax(const T* plane, const PoolGeometry& g, int64_t oh, int64_t ow) {
  const int64_t kh = KH ? KH : g.kh, kw = KW ? KW : g.kw;
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  constexpr Bits kAbsMask = ~Bits{0} >> 1;
  constexpr Bits kInf = std::bit_cast<Bits>(std::numeric_limits<T>::infinity());
  const TileMax<T> m = tile_max<T, KH, KW>(plane, g, oh, ow);
  const Bits target = std::bit_cast<Bits>(m.value);
  const int64_t start = oh * kh * g.w + ow * kw;
  int64_t winner = start;
  for (int64_t i = kh - 1; i >= 0; --i) {
    for (int64_t j = kw - 1; j >= 0; --j) {  // backwards, so the first hit is kept last
      const Bits v = std::bit_cast<Bits>(plane[start + i * g.w + j]);
      const bool hit = m.is_nan ? (v & kAbsMask) > kInf : v == target;
      winner += (start + i * g.w + j - winner) & -static_cast<int64_t>(hit);  // a select GCC cannot turn into a branch
    }
  }
  return winner;
}

template <typename T, int KH, int KW> void max_pool_tiles_forward(const T* src, T* dst, const PoolGeometry& g) {
  for (int64_t oh = 0; oh < g.ho; ++oh)
    for (int64_t ow = 0; ow < g.wo; ++ow) dst[oh * g.wo + ow] = tile_max<T, KH, KW>(src, g, oh, ow).value;
}

// The gradient goes to each window's first maximum; every other element of
// the window gets zero (written, not accumulated: windows do not overlap).
template <typename T, int KH, int KW>
void max_pool_tiles_backward(const T* src, const T* go, T* gi, const PoolGeometry& g) {
  const int64_t kh = KH ? KH : g.kh, kw = KW ? KW : g.kw;
  // Rows and columns past the last window get no gradient.
  if (g.ho * kh < g.h || g.wo * kw < g.w) std::fill(gi, gi + g.h * g.w, T(0));
  for (int64_t oh = 0; oh < g.ho; ++oh) {
    for (int64_t ow = 0; ow < g.wo; ++ow) {
      const int64_t winner = tile_argmax<T, KH, KW>(src, g, oh, ow), start = oh * kh * g.w + ow * kw;
      const T grad = go[oh * g.wo + ow];
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t idx = start + i * g.w + j;
          gi[idx] = idx == winner ? grad : T(0);
        }
      }
    }
  }
}

// The 2x2 windows of the common 2x2/2 max pool. The forward pass's output
// holds each window's maximum, so the winner is the first element equal to
// it (or the first NaN, when the maximum is NaN: the forward pass propagates
// NaN). Written as straight-line selects without loops or branches, which
// the compiler vectorizes across a row of windows.
template <typename T>
void max_pool_2x2_backward(const T* src, const T* out, const T* go, T* gi, const PoolGeometry& g) {
  if (g.ho * 2 < g.h || g.wo * 2 < g.w) std::fill(gi, gi + g.h * g.w, T(0));
  for (int64_t oh = 0; oh < g.ho; ++oh) {
    const T* r0 = src + 2 * oh * g.w;
    const T* r1 = r0 + g.w;
    T* g0 = gi + 2 * oh * g.w;
    T* g1 = g0 + g.w;
    const T* maxima = out + oh * g.wo;
    const T* grad = go + oh * g.wo;
    for (int64_t ow = 0; ow < g.wo; ++ow) {
      const T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
      (void)d;  // the winner when a, b and c are not
      const T m = maxima[ow], gv = grad[ow];
      const bool wins_a = (a == m) | (a != a);
      const bool wins_b = (!wins_a) & ((b == m) | (b != b));
      const bool wins_c = (!(wins_a | wins_b)) & ((c == m) | (c != c));
      const bool wins_d = !(wins_a | wins_b | wins_c);
      g0[2 * ow] = wins_a ? gv : T(0);
      g0[2 * ow + 1] = wins_b ? gv : T(0);
      g1[2 * ow] = wins_c ? gv : T(0);
      g1[2 * ow + 1] = wins_d ? gv : T(0);
    }
  }
}

// Index (within the plane) of the first maximum of the window; NaN counts as the maximum.
template <typename T> int64_t window_argmax(const T* plane, const PoolGeometry& g, const Window& win) {
  int64_t best_idx = win.h0 * g.w + win.w0;
  T best = -std::numeric_limits<T>::infinity();
  bool first = true;
  for (int64_t ih = win.h0; ih < win.h1; ++ih) {
    for (int64_t iw = win.w0; iw < win.w1; ++iw) {
      const T v = plane[ih * g.w + iw];
      if (first || v > best || (std::isnan(v) && !std::isnan(best))) {
        best = v;
        best_idx = ih * g.w + iw;
        first = false;
      }
      if (std::isnan(best)) return best_idx;
    }
  }
  return best_idx;
}

template <typename T>
void pool_forward(PoolKind kind, const View& out_view, const View& in_view, const PoolGeometry& g) {
  const DenseIn<T> in(in_view);
  DenseOut<T> out(out_view);
  const int64_t in_plane = g.h * g.w, out_plane = g.ho * g.wo;
#pragma omp parallel for schedule(static) if (g.planes * out_plane * g.kh * g.kw > 16384)
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* src = in.get() + pl * in_plane;
    T* dst = out.get() + pl * out_plane;
    if (kind == PoolKind::Max && windows_tile(g)) {
      if (g.kh == 2 && g.kw == 2)
        max_pool_tiles_forward<T, 2, 2>(src, dst, g);
      else
        max_pool_tiles_forward<T, 0, 0>(src, dst, g);
      continue;
    }
    for (int64_t oh = 0; oh < g.ho; ++oh) {
      for (int64_t ow = 0; ow < g.wo; ++ow) {
        const Window win = window_at(g, oh, ow);
        if (kind == PoolKind::Max) {
          dst[oh * g.wo + ow] = src[window_argmax(src, g, win)];
        } else {
          double sum = 0;
          for (int64_t ih = win.h0; ih < win.h1; ++ih)
            for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += src[ih * g.w + iw];
          dst[oh * g.wo + ow] = static_cast<T>(sum / static_cast<double>(win.divisor));
        }
      }
    }
  }
  out.commit();
}

template <typename T>
void pool_backward(PoolKind kind, const View& grad_in_view, const View& grad_out_view, const View& in_view,
                   const View& out_view, const PoolGeometry& g) {
  const DenseIn<T> grad_out(grad_out_view);
  DenseOut<T> grad_in(grad_in_view);
  // Average pooling never reads the input values.
  const View nothing{nullptr, dtype_of<T>::value, {0}, {1}};
  const DenseIn<T> in(kind == PoolKind::Max ? in_view : nothing);
  const bool max_2x2 = kind == PoolKind::Max && windows_tile(g) && g.kh == 2 && g.kw == 2;
  const DenseIn<T> out(max_2x2 ? out_view : nothing);
  const int64_t in_plane = g.h * g.w, out_plane = g.ho * g.wo;
#pragma omp parallel for schedule(static) if (g.planes * out_plane * g.kh * g.kw > 16384)
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* go = grad_out.get() + pl * out_plane;
    T* gi = grad_in.get() + pl * in_plane;
    if (kind == PoolKind::Max && windows_tile(g)) {
      const T* src = in.get() + pl * in_plane;
      if (max_2x2)
        max_pool_2x2_backward(src, out.get() + pl * out_plane, go, gi, g);
      else
        max_pool_tiles_backward<T, 0, 0>(src, go, gi, g);
      continue;
    }
    std::fill(gi, gi + in_plane, T(0));
    for (int64_t oh = 0; oh < g.ho; ++oh) {
      for (int64_t ow = 0; ow < g.wo; ++ow) {
        const Window win = window_at(g, oh, ow);
        const T grad = go[oh * g.wo + ow];
        if (kind == PoolKind::Max) {
          if (win.h1 > win.h0 && win.w1 > win.w0) gi[window_argmax(in.get() + pl * in_plane, g, win)] += grad;
        } else {
          const T share = static_cast<T>(grad / static_cast<double>(win.divisor));
          for (int64_t ih = win.h0; ih < win.h1; ++ih)
            for (int64_t iw = win.w0; iw < win.w1; ++iw) gi[ih * g.w + iw] += share;
        }
      }
    }
  }
  grad_in.commit();
}

}  // namespace

void pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) {
  const PoolGeometry g = pool_geometry("pool2d", in.shape, out.shape, p);
  dispatch_floating("pool2d", out.dtype, [&](auto tag) { pool_forward<decltype(tag)>(kind, out, in, g); });
}

void pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in, const View& out,
                     const Pool2dParams& p) {
  const PoolGeometry g = pool_geometry("pool2d_backward", grad_in.shape, grad_out.shape, p);
  ANVIL_CHECK(kind != PoolKind::Max || in.shape == grad_in.shape, "pool2d_backward: max pooling needs the input ",
              "of the forward pass with grad_in's shape ", grad_in.shape, ", got ", in.shape);
  ANVIL_CHECK(kind != PoolKind::Max || out.shape == grad_out.shape, "pool2d_backward: max pooling needs the output ",
              "of the forward pass with grad_out's shape ", grad_out.shape, ", got ", out.shape);
  dispatch_floating("pool2d_backward", grad_in.dtype,
                    [&](auto tag) { pool_backward<decltype(tag)>(kind, grad_in, grad_out, in, out, g); });
}

ANVIL_REGISTER_KERNEL(kernel::Pool2d, CPU, pool2d);
ANVIL_REGISTER_KERNEL(kernel::Pool2dBackward, CPU, pool2d_backward);

}  // namespace anvil::cpu
