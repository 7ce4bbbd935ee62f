#pragma once
// float32 <-> float16 and float32 <-> bfloat16 over contiguous arrays,
// vectorised with Google Highway (runtime dispatch, as vector_math.h) and
// bit-identical to the scalar conversions of core/base/half.h: round to
// nearest even, overflow to inf, subnormals rounded in the same float add,
// NaN kept NaN (float -> float16: the scalar's quiet NaN 0x7e00 with the
// sign; float16 -> float: the payload kept, not quietened, unlike F16C's
// vcvtph2ps; float -> bfloat16: the top half with the quiet bit set). The
// vector code is the scalar algorithm on integer lanes, not the CPU's
// conversion instructions, which differ on NaN payloads and (bfloat16 in
// Highway 1.0.3) truncate instead of rounding.
//
// Callers use these when vec::enabled() (vector_math.h); built without
// Highway they are the scalar loops.
#include <cstdint>
#include <functional>

#include "core/base/half.h"

namespace anvil::cpu::vec {

// stream: write out with streaming stores (vector_math.h, stream_output).
void convert(Half* out, const float* in, int64_t n, bool stream = false);
void convert(float* out, const Half* in, int64_t n, bool stream = false);
void convert(BFloat16* out, const float* in, int64_t n, bool stream = false);
void convert(float* out, const BFloat16* in, int64_t n, bool stream = false);

// Whether convert(To*, const From*, n) exists: float32 to or from a 16-bit float.
template <typename To, typename From> inline constexpr bool converts = requires(To* out, const From* in) {
  convert(out, in, int64_t{});
};

// For tests: runs f once per instruction set this CPU supports that the
// kernels were compiled for (AVX3, AVX2, SSE4, EMU128, ...), with the
// dispatch pinned to it, f given its name; then restores the dispatch.
// Built without Highway f runs once, with "scalar".
void for_each_target(const std::function<void(const char* target)>& f);

}  // namespace anvil::cpu::vec
