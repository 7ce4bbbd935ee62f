#pragma once
// The CUDA kernel language for the host compiler: force-included (g++
// -include) before every .cu file of the emulated-GPU build, so the project's
// kernels compile unchanged as C++ and run on the emulator's fibers.
//
//   __shared__            thread_local: a stream worker runs one block at a
//                         time, and block-scope thread_local is static storage,
//                         so each worker has its own copy, as each SM has.
//   threadIdx, blockIdx,  read from the running fiber and block through
//   blockDim, gridDim     calls into the (uninstrumented) scheduler, so the
//                         race checker never mistakes them for shared memory.
//   __syncthreads, warp   rendezvous in the scheduler, which checks that every
//   shuffles and votes    participant is at the same call site (synccheck).
//   atomics               GCC __atomic builtins: with -fsanitize=thread
//                         instrumentation they reach the checkers as atomic.
//   __global__, __device__, __forceinline__, __align__, vector types,
//   __half, __nv_bfloat16 CUDA's own headers, as they are on the host.
#define ANVIL_EMULATED_DEVICE_CODE 1  // this translation unit is kernel source (a .cu file)
// Defined before host_defines.h, which keeps an existing definition when
// __CUDACC__ is not defined.
#define __shared__ thread_local
#define __launch_bounds__(...)
#define __grid_constant__

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>  // float overloads of exp/log/... in the global namespace, as CUDA provides

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

namespace anvil::emulator {

// Where a barrier or warp operation was called from (synccheck reports it).
struct Site {
  const char* file;
  unsigned line;
};
inline Site site_of(const std::source_location& l) { return Site{l.file_name(), l.line()}; }

struct BlockGeometry {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

// The running CUDA thread's index and its block's geometry. Defined in the
// scheduler; out of line on purpose (see above).
const uint3* current_thread_idx();
const BlockGeometry* current_block();

void syncthreads(Site s);
int syncthreads_reduce(int predicate, int kind, Site s);  // kind: 0 count, 1 and, 2 or

enum WarpOp : int { kShflIdx, kShflUp, kShflDown, kShflXor, kBallot, kSyncwarp };
uint64_t warp_op(unsigned mask, uint64_t value, WarpOp op, int arg, int width, Site s);

template <typename T> inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle of a type wider than 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T> inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

// Read-modify-write by compare-and-swap, for the atomics the hardware has but
// __atomic lacks (floating add, 16-bit types, min/max on floats).
template <typename T, typename F> inline T cas_update(T* p, F f) {
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  static_assert(sizeof(T) == sizeof(U), "atomic on an unsupported type size");
  U* w = reinterpret_cast<U*>(p);
  U old = __atomic_load_n(w, __ATOMIC_RELAXED);
  for (;;) {
    const T cur = std::bit_cast<T>(old);
    const U want = std::bit_cast<U>(static_cast<T>(f(cur)));
    if (__atomic_compare_exchange_n(w, &old, want, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return cur;
  }
}

}  // namespace anvil::emulator

// ---- built-in variables ----
#define threadIdx (*::anvil::emulator::current_thread_idx())
#define blockIdx (::anvil::emulator::current_block()->block_idx)
#define blockDim (::anvil::emulator::current_block()->block_dim)
#define gridDim (::anvil::emulator::current_block()->grid_dim)
inline constexpr int warpSize = 32;

// ---- barriers ----
inline void __syncthreads(std::source_location l = std::source_location::current()) {
  ::anvil::emulator::syncthreads(::anvil::emulator::site_of(l));
}
inline int __syncthreads_count(int p, std::source_location l = std::source_location::current()) {
  return ::anvil::emulator::syncthreads_reduce(p, 0, ::anvil::emulator::site_of(l));
}
inline int __syncthreads_and(int p, std::source_location l = std::source_location::current()) {
  return ::anvil::emulator::syncthreads_reduce(p, 1, ::anvil::emulator::site_of(l));
}
inline int __syncthreads_or(int p, std::source_location l = std::source_location::current()) {
  return ::anvil::emulator::syncthreads_reduce(p, 2, ::anvil::emulator::site_of(l));
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location l = std::source_location::current()) {
  ::anvil::emulator::warp_op(mask, 0, ::anvil::emulator::kSyncwarp, 0, 32, ::anvil::emulator::site_of(l));
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- warp shuffles and votes ----
#define ANVIL_EMU_SHUFFLE(name, op, ArgT) \
  template <typename T> \
  inline T name(unsigned mask, T v, ArgT arg, int width = 32, \
                std::source_location l = std::source_location::current()) { \
    return ::anvil::emulator::from_bits<T>(::anvil::emulator::warp_op(mask, ::anvil::emulator::to_bits(v), \
                                                                      ::anvil::emulator::op, static_cast<int>(arg), \
                                                                      width, ::anvil::emulator::site_of(l))); \
  }
ANVIL_EMU_SHUFFLE(__shfl_sync, kShflIdx, int)
ANVIL_EMU_SHUFFLE(__shfl_up_sync, kShflUp, unsigned)
ANVIL_EMU_SHUFFLE(__shfl_down_sync, kShflDown, unsigned)
ANVIL_EMU_SHUFFLE(__shfl_xor_sync, kShflXor, int)
#undef ANVIL_EMU_SHUFFLE

inline unsigned __ballot_sync(unsigned mask, int pred, std::source_location l = std::source_location::current()) {
  return static_cast<unsigned>(
      ::anvil::emulator::warp_op(mask, pred != 0, ::anvil::emulator::kBallot, 0, 32, ::anvil::emulator::site_of(l)));
}
inline int __any_sync(unsigned mask, int pred, std::source_location l = std::source_location::current()) {
  return __ballot_sync(mask, pred, l) != 0;
}
inline int __all_sync(unsigned mask, int pred, std::source_location l = std::source_location::current()) {
  return __ballot_sync(mask, pred, l) == mask;
}

// ---- atomics (device scope) ----
template <typename T>
requires std::is_integral_v<T>
inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <typename T>
requires std::is_integral_v<T>
inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) {
  return ::anvil::emulator::cas_update(p, [v](float x) { return x + v; });
}
inline double atomicAdd(double* p, double v) {
  return ::anvil::emulator::cas_update(p, [v](double x) { return x + v; });
}
inline __half atomicAdd(__half* p, __half v) {
  return ::anvil::emulator::cas_update(p, [v](__half x) { return __float2half_rn(__half2float(x) + __half2float(v)); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
  return ::anvil::emulator::cas_update(
      p, [v](__nv_bfloat16 x) { return __float2bfloat16_rn(__bfloat162float(x) + __bfloat162float(v)); });
}
template <typename T>
requires std::is_integral_v<T>
inline T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;  // the old value either way
}
template <typename T> inline T atomicExch(T* p, T v) {
  if constexpr (std::is_integral_v<T>)
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
  else
    return ::anvil::emulator::cas_update(p, [v](T) { return v; });
}
template <typename T> inline T atomicMax(T* p, T v) {
  return ::anvil::emulator::cas_update(p, [v](T x) { return x < v ? v : x; });
}
template <typename T> inline T atomicMin(T* p, T v) {
  return ::anvil::emulator::cas_update(p, [v](T x) { return v < x ? v : x; });
}

// ---- loads and floating-point intrinsics ----
// The emulated build compiles with -ffp-contract=off, so a + b is one rounding
// like __dadd_rn; the GPU's fast approximations (__expf, __logf) differ from
// libm by a few ulp, which the tests' tolerances allow.
template <typename T> inline T __ldg(const T* p) { return *p; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __double2float_rn(double d) { return static_cast<float>(d); }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline double __longlong_as_double(long long i) { return std::bit_cast<double>(i); }
inline long long __double_as_longlong(double d) { return std::bit_cast<long long>(d); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<uint64_t>(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}

// CUDA's min/max take mixed integer types (promoting) and are fminf/fmaxf for floats.
template <typename A, typename B>
requires(std::is_arithmetic_v<A>&& std::is_arithmetic_v<B>) inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>)
    return std::fmin(C(a), C(b));
  else
    return C(b) < C(a) ? C(b) : C(a);
}
template <typename A, typename B>
requires(std::is_arithmetic_v<A>&& std::is_arithmetic_v<B>) inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>)
    return std::fmax(C(a), C(b));
  else
    return C(a) < C(b) ? C(b) : C(a);
}
