#pragma once
/// @file
/// ANVIL_HD marks a small function that both the CPU backend and CUDA kernels
/// call (Philox, value conversions): __host__ __device__ under nvcc, a plain
/// inline function everywhere else (the emulated GPU compiles kernels as C++).
#if defined(__CUDACC__)
#define ANVIL_HD __host__ __device__ __forceinline__
#else
/// Marks a function both the host and CUDA kernels call: `__host__ __device__` under nvcc, `inline` elsewhere.
#define ANVIL_HD inline
#endif
