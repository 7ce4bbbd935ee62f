#pragma once
// Tensor-core building blocks (sm_80+): mma.sync m16n8k16 with bfloat16 or
// float16 inputs and float accumulators, ldmatrix fragment loads from shared
// memory, and cp.async 16-byte global -> shared copies.
//
// Under nvcc each is one inline-PTX instruction. On the emulated GPU
// (ANVIL_EMULATED_DEVICE_CODE) mma and ldmatrix are warp collectives of the
// emulator (emulator/tensor_cores.h) that compute what the PTX ISA specifies
// in the layouts below, and every shared-memory byte they read or write goes
// through its checkers; so a kernel built on these runs, and is checked, there.
//
// Fragment layouts (PTX ISA: "Matrix Fragments for mma.m16n8k16 with
// floating point type" and "ldmatrix"). lane = %laneid, g = lane / 4 (the
// group), q = lane % 4 (the thread in the group). A 32-bit register holds two
// 16-bit elements, the one with the lower column (or k) index in its low half.
//
//   A, 16 x 16 (M x K, row-major), uint32_t a[4]:
//     a[0] = A[g][2q, 2q+1]        a[1] = A[g+8][2q, 2q+1]
//     a[2] = A[g][2q+8, 2q+9]      a[3] = A[g+8][2q+8, 2q+9]
//   B, 16 x 8 (K x N, "col": a lane's pair runs along k), uint32_t b[2]:
//     b[0] = B[2q, 2q+1][g]        b[1] = B[2q+8, 2q+9][g]
//   C and D, 16 x 8 float, float c[4]:
//     c[0], c[1] = C[g][2q, 2q+1]  c[2], c[3] = C[g+8][2q, 2q+1]
//
//   ldmatrix .m8n8 .b16: each matrix is 8 rows of 8 16-bit elements, every
//   row 16 contiguous bytes, 16-byte aligned, in shared memory, anywhere.
//   Lane l supplies the address of row l % 8 of matrix l / 8 (.x4: all 32
//   lanes; .x2: lanes 0-15; the other lanes' addresses are ignored). Register
//   r[i] receives matrix i, spread over the warp like C above:
//     r[i] = M_i[g][2q, 2q+1]                       (plain)
//     r[i] = M_i[2q][g], M_i[2q+1][g]               (.trans: M_i transposed)
//
// So for a 16 x 16 row-major tile T in shared memory:
//   * ldmatrix_x4 with lane l pointing at T[l % 16][(l / 16) * 8] gives
//     matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15):
//     exactly an A fragment;
//   * ldmatrix_x4_trans of a K x N tile with lane l at T[l % 16][(l / 16) * 8]
//     gives two B fragments: {r[0], r[1]} for columns 0-7, {r[2], r[3]} for
//     columns 8-15.
//
// cp.async: cp_async_16(dst, src, n) copies n <= 16 bytes global -> shared
// and zero-fills the rest of the 16 (n = 0: src is not read); cp_async_commit
// closes a group of copies; cp_async_wait<N>() waits until at most N groups
// are still in flight. A thread sees its copies only after the wait; other
// threads only after the wait and a barrier.
//
// What the emulated GPU cannot check here: its cp.async completes at issue (a
// plain 16-byte copy through the checkers), and commit and wait do nothing;
// so a missing or too-lenient cp_async_wait (reading a stage before its copy
// landed) gives right answers there and wrong ones on a GPU. Its mma adds the
// 16 products in order in float, where a tensor core has its own order and
// rounding: results may differ from a GPU's in the last bits.
//
// Device-only header.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#if defined(ANVIL_EMULATED_DEVICE_CODE)
#include <source_location>

#include "kernels/cuda/emulator/tensor_cores.h"
#endif

namespace anvil::cuda::dev {

#if !defined(ANVIL_EMULATED_DEVICE_CODE)

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// d += a * b for one 16 x 8 x 16 tile; T is __nv_bfloat16 or __half.
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "mma_m16n8k16: bf16 or f16 inputs");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // no m16n8k16 before sm_80; the host checks the device before launching
#else
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// `row`: the shared-memory row this lane supplies (see above).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
}

// `dst` shared, `src` global, both 16-byte aligned; 0 <= src_bytes <= 16.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

#else  // the emulated GPU: the same functions as emulator collectives

namespace detail {
inline unsigned emulated_lane() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32; }

// This lane reads its row itself (one 16-byte shared load through the
// checkers, as LDSM reads 16-byte rows); the collective distributes them.
template <int kMatrices, bool kTrans>
inline void ldmatrix(uint32_t* r, const void* row, const std::source_location& l) {
  const bool supplies = emulated_lane() < 8u * kMatrices;
  uint32_t bytes[4] = {};
  if (supplies) {
    // One 16-byte access (an __int128 is not split into fields): memcheck
    // checks its alignment and the memory counters see one request.
    const unsigned __int128 v = *static_cast<const unsigned __int128*>(row);
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<uint32_t>(v >> (32 * i));
  }
  ::anvil::emulator::ldmatrix_m8n8(kMatrices, kTrans, supplies ? row : nullptr, bytes, r,
                                   ::anvil::emulator::site_of(l));
}
}  // namespace detail

template <typename T>
inline void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                         std::source_location l = std::source_location::current()) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "mma_m16n8k16: bf16 or f16 inputs");
  constexpr auto inputs =
      std::is_same_v<T, __nv_bfloat16> ? ::anvil::emulator::MmaInputs::BFloat16 : ::anvil::emulator::MmaInputs::Float16;
  ::anvil::emulator::mma_m16n8k16(inputs, d, a, b, d, ::anvil::emulator::site_of(l));
}

inline void ldmatrix_x4(uint32_t (&r)[4], const void* row, std::source_location l = std::source_location::current()) {
  detail::ldmatrix<4, false>(r, row, l);
}
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row,
                              std::source_location l = std::source_location::current()) {
  detail::ldmatrix<4, true>(r, row, l);
}
inline void ldmatrix_x2(uint32_t (&r)[2], const void* row, std::source_location l = std::source_location::current()) {
  detail::ldmatrix<2, false>(r, row, l);
}
inline void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row,
                              std::source_location l = std::source_location::current()) {
  detail::ldmatrix<2, true>(r, row, l);
}

// Completes at issue: the global bytes are read and the 16 shared bytes
// written now, by this thread, through the checkers (see the header comment).
inline void cp_async_16(void* dst, const void* src, int src_bytes = 16) {
  ::anvil::emulator::check_cp_async_16(dst, src, src_bytes);
  unsigned __int128 v = 0;  // 16-byte accesses, as in ldmatrix above
  if (src_bytes >= 16) {
    v = *static_cast<const unsigned __int128*>(src);
  } else {
    const auto* bytes = static_cast<const volatile unsigned char*>(src);  // volatile: byte reads, never widened
    for (int i = 0; i < src_bytes; ++i) v |= static_cast<unsigned __int128>(bytes[i]) << (8 * i);
  }
  *static_cast<unsigned __int128*>(dst) = v;
}
inline void cp_async_commit() {}
template <int kPending> inline void cp_async_wait() {}

#endif

}  // namespace anvil::cuda::dev
