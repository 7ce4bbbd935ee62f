#pragma once
// Which Highway targets the kernels are compiled for, included before any
// Highway header. Each target is one more compile of vector_math.cpp and
// vector_rows.cpp, and compile time is a feature: float32 math gains nothing
// from SSSE3 over the portable EMU128 (a CPU without SSE4.1 takes that), nor
// from AVX3_DL over AVX3 (its extra instructions are integer and bit ops).
// Left: AVX3 (AVX-512), AVX2 (+FMA), SSE4, EMU128; NEON/SVE on ARM.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)
#endif
