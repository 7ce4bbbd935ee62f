#pragma once
// 16-byte vectorized loads and stores. A thread moves kVec elements with one
// 128-bit instruction (LDG.E.128 / STG.E.128), which halves or quarters the
// instruction count of memory-bound kernels. The host checks alignment before
// choosing a vectorized kernel (vec_aligned); these functions assume it.
//
// Device-only header.
#include <cstdint>

namespace anvil::cuda::dev {

inline constexpr int kVecBytes = 16;

// Elements of T per 16-byte access.
template <typename T>
inline constexpr int vec_size_v = kVecBytes / static_cast<int>(sizeof(T)) > 0 ? kVecBytes / static_cast<int>(sizeof(T))
                                                                              : 1;

// N elements of T, aligned as one access of N * sizeof(T) bytes.
template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

template <int N, typename T> __device__ __forceinline__ Vec<T, N> load_vec(const T* p) {  // p aligned to N * sizeof(T)
  return *reinterpret_cast<const Vec<T, N>*>(p);
}

template <int N, typename T> __device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  *reinterpret_cast<Vec<T, N>*>(p) = v;
}

// Read-only-cache load of a whole vector (the data must not be written by the kernel).
template <int N, typename T> __device__ __forceinline__ Vec<T, N> load_vec_ro(const T* p) {
  Vec<T, N> r;
  if constexpr (sizeof(Vec<T, N>) == 16) {
    const int4 w = __ldg(reinterpret_cast<const int4*>(p));
    r = *reinterpret_cast<const Vec<T, N>*>(&w);
  } else if constexpr (sizeof(Vec<T, N>) == 8) {
    const int2 w = __ldg(reinterpret_cast<const int2*>(p));
    r = *reinterpret_cast<const Vec<T, N>*>(&w);
  } else {
    r = load_vec<N>(p);
  }
  return r;
}

// Host and device: is p aligned for an access of `bytes` bytes?
__host__ __device__ inline bool vec_aligned(const void* p, int64_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes)) == 0;
}

}  // namespace anvil::cuda::dev
