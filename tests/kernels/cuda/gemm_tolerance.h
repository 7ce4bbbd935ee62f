#pragma once
// How far a GEMM ladder rung may be from the exact product of its (rounded)
// inputs: shared by test_gemm_ladder.cpp (every rung on a real GPU) and
// emulator/test_gemm_rungs.cpp (the rungs on the emulated GPU), so both
// judge a rung by the same standard.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/gemm/gemm.h"

namespace anvil::cuda::gemm {

// |ours - exact| <= atol + rtol * |exact|. Float32 accumulation in any
// order drifts from the exact sum about like eps * K for
// N(0,1) inputs (the sum's magnitude is ~sqrt(K), each partial sum rounds).
// For 16-bit outputs our result is rounded to the dtype at the end, so
// it may be an ulp of the output off: rtol of 2 ulps, atol scaled by the
// sum's typical size sqrt(K).
struct Tol {
  double rtol, atol;
};
inline Tol tolerance(GemmDType t, int64_t K) {
  const double k = static_cast<double>(K > 0 ? K : 1);
  switch (t) {
    case GemmDType::Float32:
      return {1e-4, 2e-6 * k + 1e-5};
    case GemmDType::BFloat16:
      return {1.6e-2, 4e-3 * std::sqrt(k) + 1e-2};
    case GemmDType::Float16:
      return {2e-3, 5e-4 * std::sqrt(k) + 1e-3};
  }
  return {0, 0};
}

}  // namespace anvil::cuda::gemm
