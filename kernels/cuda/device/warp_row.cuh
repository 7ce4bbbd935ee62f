#pragma once
// A row of up to 32 * kPer elements held in registers by one warp, kPer
// values a lane, read and written kVec elements per access (16 bytes when the
// host has checked the row allows it; kVec = 1 otherwise). The warp's
// accesses are adjacent: access t of lane l covers elements
// kVec * (l + 32 t) .. + kVec - 1, so each instruction moves 32 * kVec
// consecutive elements. Slot s of a lane holds element row_slot<kVec>(l, s).
//
// Loads are unconditional: a vector past the row's end reads the row's first
// vector instead and its slots get `fill`. So the compiler can issue all of a
// lane's loads before the first use, with no branch between them.
//
// Device-only header.
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/device/vector_access.cuh"

namespace anvil::cuda::dev {

template <int kVec> __device__ __forceinline__ int row_slot(int lane, int slot) {
  return kVec * (lane + 32 * (slot / kVec)) + slot % kVec;
}

// With kVec > 1 the host guarantees n % kVec == 0 and x aligned to kVec
// elements' bytes: a vector is wholly inside the row or wholly past it.
template <int kVec, int kPer, typename C, typename T>
__device__ __forceinline__ void load_warp_row(C (&v)[kPer], const T* x, int n, int lane, C fill) {
  static_assert(kPer % kVec == 0, "a lane's slots are whole vectors");
#pragma unroll
  for (int t = 0; t < kPer / kVec; ++t) {
    const int i = kVec * (lane + 32 * t);
    const bool inside = i < n;
    const Vec<T, kVec> w = load_vec<kVec>(x + (inside ? i : 0));
#pragma unroll
    for (int c = 0; c < kVec; ++c) v[t * kVec + c] = inside ? cast<C>(w.v[c]) : fill;
  }
}

// y[row_slot(lane, s)] = value(s) for the slots inside the row.
template <int kVec, int kPer, typename T, typename Value>
__device__ __forceinline__ void store_warp_row(T* y, int n, int lane, Value&& value) {
#pragma unroll
  for (int t = 0; t < kPer / kVec; ++t) {
    const int i = kVec * (lane + 32 * t);
    if (i >= n) continue;
    Vec<T, kVec> w;
#pragma unroll
    for (int c = 0; c < kVec; ++c) w.v[c] = cast<T>(value(t * kVec + c));
    store_vec<kVec>(y + i, w);
  }
}

}  // namespace anvil::cuda::dev
