// Per-target float32 math for the Highway kernels (vector_math.cpp,
// vector_rows.cpp): Highway's contrib math with the special values its valid
// ranges leave out put back (NaN in, NaN out; log of 0, of a negative, of
// inf; log1p at and below -1), and erf, which Highway lacks; and the two
// memory hints these and vector_convert.cpp share. Included once
// per target by hwy/foreach_target.h, hence the toggling guard (Highway's
// convention for -inl.h files) instead of #pragma once.
#if defined(ANVIL_KERNELS_CPU_VECTOR_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ANVIL_KERNELS_CPU_VECTOR_MATH_INL_H_
#undef ANVIL_KERNELS_CPU_VECTOR_MATH_INL_H_
#else
#define ANVIL_KERNELS_CPU_VECTOR_MATH_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace anvil::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// The kernels ask for their inputs a page (4 KiB) ahead of what they read.
// The hardware prefetcher stops at page boundaries and, with ~40 vector
// operations per element as in exp, the out-of-order window holds too few
// loads to cover the memory's latency: the arithmetic and the memory took
// turns. Asked for a page ahead, the lines arrive while the core computes,
// and a row of a page or more (sum over rows of 1024 floats) no longer
// starts each page on a miss.
// Past the end of an array the hint is dropped: a prefetch never faults.
// (GCC 12 emitted no prefetch for the same call written in a lambda, nor
// from a plain inline function outside the per-target namespace.)
inline constexpr int64_t kPrefetchAheadBytes = 4096;
template <class T> HWY_INLINE void PrefetchAhead(const T* p, int64_t count) {
  const char* ahead = reinterpret_cast<const char*>(p) + kPrefetchAheadBytes;
  const int64_t bytes = count * static_cast<int64_t>(sizeof(T));
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(ahead + b);  // a cache line each
}

// How many of the n elements (elem_bytes each) from p come before p's next
// multiple of vector_bytes: a streaming store needs an aligned address, so
// these go out with plain stores first.
HWY_INLINE int64_t ElementsBeforeAlignment(const void* p, int64_t vector_bytes, int64_t elem_bytes, int64_t n) {
  const auto misaligned = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(vector_bytes));
  return std::min(n, (vector_bytes - misaligned) % vector_bytes / elem_bytes);
}

inline V Inf(D d) { return hn::Set(d, std::numeric_limits<float>::infinity()); }
inline V NaN(D d) { return hn::Set(d, std::numeric_limits<float>::quiet_NaN()); }

// e^x and e^x - 1. On AVX-512 (Highway's AVX3 target) they run Highway's
// polynomial for e^r on [-ln2/2, ln2/2] (impl::ExpImpl<float>::ExpPoly, the
// one hn::Exp uses) around AVX-512's own rounding and scaling: k =
// vrndscaleps(x / ln 2), r = x - k ln 2 in two FMAs, e^x = vscalefps(e^r, k).
// hn::Exp gets k through float -> int -> float conversions and builds 2^k
// with integer shifts and adds: 35 instructions where this takes 20, and
// the conversions and shifts share port 0 with the FMAs. exp and expm1
// keep hn::Exp's and hn::Expm1's 1 and 3 ulp (the table and the timings in
// kernels/cpu/README.md; tests/kernels/cpu/test_cpu_vector_math.cpp,
// MathFunctionsWithinTheirUlpBounds). vscalefps gives inf past 88.72 and
// (rounded) subnormals below -87.3 by itself. x past 100 is clamped to 100
// (no inf - inf in the reduction); the clamp's operand order (vminps
// returns its second operand when either is NaN) lets a NaN through.
// Below -104 (e^x rounds to 0; -inf is how attention masks a score) x is
// replaced by 0 and the result by 0 (exp) or -1 (expm1): scaling down to a
// subnormal or to 0 takes a microcode assist of ~100 cycles a vector, and
// the masked half of causal attention's scores went through it (char_gpt's
// training slowed down visibly until this). Other targets use hn::Exp and
// hn::Expm1 with the special values put back.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

// k = round(x / ln 2) and r = x - k ln 2, ln 2 in two parts (the first with
// trailing zero bits), so that e^x = 2^k e^r with |r| <= ln2 / 2.
struct Ln2Split {
  V k, r;
};
HWY_INLINE Ln2Split SplitByLn2(D d, V x) {
  const V k{_mm512_roundscale_ps(hn::Mul(x, hn::Set(d, 1.44269504088896341f)).raw,
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
  const V r = hn::MulAdd(k, hn::Set(d, -1.428606765330187045e-6f), hn::MulAdd(k, hn::Set(d, -0.693145751953125f), x));
  return {k, r};
}
// SplitByLn2 of x clamped to 100; below: the lanes whose x < -104, computed as x = 0.
struct ExpReduced {
  V k, r;
  hn::Mask<D> below;
};
HWY_INLINE ExpReduced ReduceForExp(D d, V x) {
  const auto below = hn::Lt(x, hn::Set(d, -104.0f));
  const Ln2Split split = SplitByLn2(d, hn::IfThenZeroElse(below, V{_mm512_min_ps(_mm512_set1_ps(100.0f), x.raw)}));
  return {split.k, split.r, below};
}
// e^r - 1 for |r| <= ln2 / 2.
HWY_INLINE V Expm1Poly(D d, V r) { return hn::impl::ExpImpl<float>().ExpPoly(d, r); }

HWY_INLINE V ExpF(D d, V x) {
  const ExpReduced e = ReduceForExp(d, x);
  return hn::IfThenZeroElse(e.below, V{_mm512_scalef_ps(hn::Add(Expm1Poly(d, e.r), hn::Set(d, 1.0f)).raw, e.k.raw)});
}
// Where k = 0 (|x| < ln2 / 2) the polynomial is e^x - 1 itself, with no 1
// added and taken away; elsewhere |e^x - 1| > 0.29 and the subtraction
// costs under two bits (3 ulp in all, as Highway's).
HWY_INLINE V Expm1F(D d, V x) {
  const ExpReduced e = ReduceForExp(d, x);
  const V y = Expm1Poly(d, e.r);
  const V one = hn::Set(d, 1.0f);
  const V big = hn::Sub(V{_mm512_scalef_ps(hn::Add(y, one).raw, e.k.raw)}, one);
  return hn::IfThenElse(e.below, hn::Neg(one), hn::IfThenElse(hn::Eq(e.k, hn::Zero(d)), y, big));
}

// tanh a = (1 - e) / (1 + e) for a = |x|, e = e^-2a = 2^k (1 + p), p = e^r
// - 1 from the polynomial: numerator 1 - 2^k - 2^k p and denominator 1 +
// 2^k + 2^k p, each in one FMA, so neither cancels (k = 0, a < 0.18: the
// numerator is -p itself; k < 0: it is at least 0.29). a is clamped at 9.1,
// where tanh rounds to 1 (2^k stays normal, no assist), with NaN let
// through; the sign put back. Against tanh = expm1(2a) / (expm1(2a) + 2),
// 31 instructions a vector where that took 37 (no k = 0 select, no overflow
// test, fewer register copies), and 2 ulp where that had 3.
HWY_INLINE V TanhF(D d, V x) {
  const V sign = hn::And(hn::SignBit(d), x);
  const V a{_mm512_min_ps(_mm512_set1_ps(9.1f), hn::Xor(x, sign).raw)};
  const Ln2Split e = SplitByLn2(d, hn::Mul(a, hn::Set(d, -2.0f)));
  const V p = Expm1Poly(d, e.r);
  const V one = hn::Set(d, 1.0f);
  const V scale{_mm512_scalef_ps(one.raw, e.k.raw)};  // 2^k
  const V num = hn::NegMulAdd(scale, p, hn::Sub(one, scale));
  const V den = hn::MulAdd(scale, p, hn::Add(one, scale));
  return hn::Xor(hn::Div(num, den), sign);
}

#else

// Highway's Exp turns NaN into 0 and is valid up to x = 104 (e^x is already
// inf in float past 88.73): larger x are clamped to 100 first. 1 ulp.
HWY_INLINE V ExpF(D d, V x) { return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(d, hn::Min(x, hn::Set(d, 100.0f)))); }

HWY_INLINE V Expm1F(D d, V x) { return hn::IfThenElse(hn::IsNaN(x), x, hn::Expm1(d, hn::Min(x, hn::Set(d, 100.0f)))); }

HWY_INLINE V TanhF(D d, V x) { return hn::Tanh(d, x); }

#endif

// Highway's Log is valid on (0, FLT_MAX] (subnormals included).
HWY_INLINE V LogF(D d, V x) {
  V r = hn::Log(d, x);
  r = hn::IfThenElse(hn::Eq(x, Inf(d)), x, r);
  r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(Inf(d)), r);  // +-0
  return hn::IfThenElse(hn::Or(hn::Lt(x, hn::Zero(d)), hn::IsNaN(x)), NaN(d), r);
}

// Highway's Log1p is documented on [0, FLT_MAX] and measured right on (-1, 0) too.
HWY_INLINE V Log1pF(D d, V x) {
  const V minus_one = hn::Set(d, -1.0f);
  V r = hn::Log1p(d, x);
  r = hn::IfThenElse(hn::Eq(x, Inf(d)), x, r);
  r = hn::IfThenElse(hn::Eq(x, minus_one), hn::Neg(Inf(d)), r);
  return hn::IfThenElse(hn::Or(hn::Lt(x, minus_one), hn::IsNaN(x)), NaN(d), r);
}

// 1 / (1 + e^-x): 0 at -inf, 1 at +inf.
HWY_INLINE V SigmoidF(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, ExpF(d, hn::Neg(x))));
}

// erf(x): Eigen's float32 rational approximation (generic_fast_erf_float,
// Eigen/src/Core/MathFunctionsImpl-era SpecialFunctionsImpl.h): x P(x^2) /
// Q(x^2) with x clamped to [-4, 4], where erf is +-1 in float.
HWY_INLINE V ErfF(D d, V a) {
  const V x = hn::Min(hn::Max(a, hn::Set(d, -4.0f)), hn::Set(d, 4.0f));
  const V x2 = hn::Mul(x, x);
  V p = hn::Set(d, -2.72614225801306e-10f);
  p = hn::MulAdd(p, x2, hn::Set(d, 2.77068142495902e-08f));
  p = hn::MulAdd(p, x2, hn::Set(d, -2.10102402082508e-06f));
  p = hn::MulAdd(p, x2, hn::Set(d, -5.69250639462346e-05f));
  p = hn::MulAdd(p, x2, hn::Set(d, -7.34990630326855e-04f));
  p = hn::MulAdd(p, x2, hn::Set(d, -2.95459980854025e-03f));
  p = hn::MulAdd(p, x2, hn::Set(d, -1.60960333262415e-02f));
  p = hn::Mul(p, x);
  V q = hn::Set(d, -1.45660718464996e-05f);
  q = hn::MulAdd(q, x2, hn::Set(d, -2.13374055278905e-04f));
  q = hn::MulAdd(q, x2, hn::Set(d, -1.68282697438203e-03f));
  q = hn::MulAdd(q, x2, hn::Set(d, -7.37332916720468e-03f));
  q = hn::MulAdd(q, x2, hn::Set(d, -1.42647390514189e-02f));
  return hn::IfThenElse(hn::IsNaN(a), a, hn::Div(p, q));
}

}  // namespace anvil::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
