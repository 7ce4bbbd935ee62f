#pragma once
// The one launcher of the elementwise family (unary, binary, where, casts):
// out[i] = f(a[i], b[i], ...) over views of one shape, with f a device functor
// that takes the inputs' storage types and returns the output's.
//
// Two kernels per (functor, types):
//   - contiguous: every view is contiguous and 16-byte aligned for its vector
//     width; each thread moves V = 16 / (largest itemsize) elements per
//     iteration with 128-bit loads and stores, then a scalar tail;
//   - strided: anything else (broadcast stride 0, transposed, sliced, or
//     contiguous but misaligned); dims are coalesced on the host first, so
//     the per-element index math is usually one or two 32-bit divisions.
// Both are grid-stride loops with one resident wave of blocks. No __restrict__
// or read-only-cache loads: in-place ops pass the same buffer as out and input.
//
// Internal to kernels/cuda (host + device code; include from .cu files only).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/device/vector_access.cuh"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/strided_offsets.h"
#include "kernels/view.h"

namespace anvil::cuda {

inline constexpr int kElementwiseThreads = 256;

namespace ew_detail {

template <int V, typename F, typename Out, typename A>
__global__ void __launch_bounds__(kElementwiseThreads) contig1(int64_t n, F f, Out* out, const A* a) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += step) {
    const auto va = dev::load_vec<V>(a + i * V);
    dev::Vec<Out, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = f(va.v[j]);
    dev::store_vec<V>(out + i * V, r);
  }
  for (int64_t i = nvec * V + first; i < n; i += step) out[i] = f(a[i]);
}

template <int V, typename F, typename Out, typename A, typename B>
__global__ void __launch_bounds__(kElementwiseThreads) contig2(int64_t n, F f, Out* out, const A* a, const B* b) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += step) {
    const auto va = dev::load_vec<V>(a + i * V);
    const auto vb = dev::load_vec<V>(b + i * V);
    dev::Vec<Out, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = f(va.v[j], vb.v[j]);
    dev::store_vec<V>(out + i * V, r);
  }
  for (int64_t i = nvec * V + first; i < n; i += step) out[i] = f(a[i], b[i]);
}

template <int V, typename F, typename Out, typename A, typename B, typename C>
__global__ void __launch_bounds__(kElementwiseThreads)
    contig3(int64_t n, F f, Out* out, const A* a, const B* b, const C* c) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += step) {
    const auto va = dev::load_vec<V>(a + i * V);
    const auto vb = dev::load_vec<V>(b + i * V);
    const auto vc = dev::load_vec<V>(c + i * V);
    dev::Vec<Out, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = f(va.v[j], vb.v[j], vc.v[j]);
    dev::store_vec<V>(out + i * V, r);
  }
  for (int64_t i = nvec * V + first; i < n; i += step) out[i] = f(a[i], b[i], c[i]);
}

template <typename F, typename Out, typename A>
__global__ void __launch_bounds__(kElementwiseThreads)
    strided1(int64_t n, F f, dev::OffsetCalculator<2> calc, Out* out, const A* a) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    calc.offsets(i, off);
    out[off[0]] = f(a[off[1]]);
  }
}

template <typename F, typename Out, typename A, typename B>
__global__ void __launch_bounds__(kElementwiseThreads)
    strided2(int64_t n, F f, dev::OffsetCalculator<3> calc, Out* out, const A* a, const B* b) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[3];
    calc.offsets(i, off);
    out[off[0]] = f(a[off[1]], b[off[2]]);
  }
}

template <typename F, typename Out, typename A, typename B, typename C>
__global__ void __launch_bounds__(kElementwiseThreads)
    strided3(int64_t n, F f, dev::OffsetCalculator<4> calc, Out* out, const A* a, const B* b, const C* c) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[4];
    calc.offsets(i, off);
    out[off[0]] = f(a[off[1]], b[off[2]], c[off[3]]);
  }
}

template <typename... T> constexpr int vec_width() {
  constexpr size_t widest = std::max({sizeof(T)...});
  return static_cast<int>(dev::kVecBytes / widest);
}

// Every view contiguous, and every pointer aligned for V elements of its type.
template <int V, typename... T, typename... Views> bool vectorizable(const Views&... views) {
  const bool contiguous = (views.is_contiguous() && ...);
  const bool aligned = (dev::vec_aligned(views.data, static_cast<int64_t>(V * sizeof(T))) && ...);
  return contiguous && aligned;
}

}  // namespace ew_detail

// `name` is for error messages. Views must have one shape (checked by the caller).
template <typename Out, typename A, typename F>
void launch_elementwise(const char* name, cudaStream_t stream, int device, const View& out, const View& a, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  constexpr int V = ew_detail::vec_width<Out, A>();
  if (ew_detail::vectorizable<V, Out, A>(out, a)) {
    launch_kernel(ew_detail::contig1<V, F, Out, A>, wave_blocks((n + V - 1) / V, kElementwiseThreads, device),
                  kElementwiseThreads, 0, stream)(n, f, out.ptr<Out>(), a.ptr<const A>());
  } else {
    const auto calc = make_offset_calculator<2>(name, {&out, &a});
    launch_kernel(ew_detail::strided1<F, Out, A>, wave_blocks(n, kElementwiseThreads, device), kElementwiseThreads, 0,
                  stream)(n, f, calc, out.ptr<Out>(), a.ptr<const A>());
  }
  ANVIL_CUDA_CHECK_LAUNCH(name);
}

template <typename Out, typename A, typename B, typename F>
void launch_elementwise(const char* name, cudaStream_t stream, int device, const View& out, const View& a,
                        const View& b, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  constexpr int V = ew_detail::vec_width<Out, A, B>();
  if (ew_detail::vectorizable<V, Out, A, B>(out, a, b)) {
    launch_kernel(ew_detail::contig2<V, F, Out, A, B>, wave_blocks((n + V - 1) / V, kElementwiseThreads, device),
                  kElementwiseThreads, 0, stream)(n, f, out.ptr<Out>(), a.ptr<const A>(), b.ptr<const B>());
  } else {
    const auto calc = make_offset_calculator<3>(name, {&out, &a, &b});
    launch_kernel(ew_detail::strided2<F, Out, A, B>, wave_blocks(n, kElementwiseThreads, device), kElementwiseThreads,
                  0, stream)(n, f, calc, out.ptr<Out>(), a.ptr<const A>(), b.ptr<const B>());
  }
  ANVIL_CUDA_CHECK_LAUNCH(name);
}

template <typename Out, typename A, typename B, typename C, typename F>
void launch_elementwise(const char* name, cudaStream_t stream, int device, const View& out, const View& a,
                        const View& b, const View& c, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  constexpr int V = ew_detail::vec_width<Out, A, B, C>();
  if (ew_detail::vectorizable<V, Out, A, B, C>(out, a, b, c)) {
    launch_kernel(ew_detail::contig3<V, F, Out, A, B, C>, wave_blocks((n + V - 1) / V, kElementwiseThreads, device),
                  kElementwiseThreads, 0,
                  stream)(n, f, out.ptr<Out>(), a.ptr<const A>(), b.ptr<const B>(), c.ptr<const C>());
  } else {
    const auto calc = make_offset_calculator<4>(name, {&out, &a, &b, &c});
    launch_kernel(ew_detail::strided3<F, Out, A, B, C>, wave_blocks(n, kElementwiseThreads, device),
                  kElementwiseThreads, 0,
                  stream)(n, f, calc, out.ptr<Out>(), a.ptr<const A>(), b.ptr<const B>(), c.ptr<const C>());
  }
  ANVIL_CUDA_CHECK_LAUNCH(name);
}

}  // namespace anvil::cuda
