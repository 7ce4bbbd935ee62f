#pragma once
// Process-wide matmul switches, like torch.backends.cuda.matmul.allow_tf32.
// Header-only and free of CUDA headers so that core/ and user code can flip
// them; the CUDA matmul reads them on every call.
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace anvil {

namespace detail {
inline std::atomic<bool>& matmul_tf32_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline std::atomic<bool>& matmul_ladder_flag() {
  // ANVIL_GEMM_LADDER=1 turns the hand-written GEMM on without code changes (benchmarks).
  static std::atomic<bool> flag{[] {
    const char* v = std::getenv("ANVIL_GEMM_LADDER");
    return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
  }()};
  return flag;
}
}  // namespace detail

// float32 matmuls may use TF32 tensor cores (10-bit mantissa inputs). Off by
// default: float32 results then match the CPU to float32 rounding.
inline bool matmul_allow_tf32() { return detail::matmul_tf32_flag().load(std::memory_order_relaxed); }
inline void set_matmul_allow_tf32(bool allow) { detail::matmul_tf32_flag().store(allow, std::memory_order_relaxed); }

// CUDA matmuls try the hand-written GEMM (kernels/cuda/gemm/) before cuBLASLt.
inline bool matmul_use_gemm_ladder() { return detail::matmul_ladder_flag().load(std::memory_order_relaxed); }
inline void set_matmul_use_gemm_ladder(bool use) { detail::matmul_ladder_flag().store(use, std::memory_order_relaxed); }

}  // namespace anvil
