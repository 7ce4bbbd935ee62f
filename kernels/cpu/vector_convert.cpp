// vector_convert.h: the scalar conversions of core/base/half.h written on
// integer lanes (compare, select, shift), compiled once per Highway target
// (hwy/foreach_target.h re-includes this file) and dispatched at run time.
#include "kernels/cpu/vector_convert.h"

#if ANVIL_HAVE_HIGHWAY

#include "kernels/cpu/highway_targets.h"  // before any Highway header

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/vector_convert.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/vector_math-inl.h"  // PrefetchAhead, ElementsBeforeAlignment

HWY_BEFORE_NAMESPACE();
namespace anvil::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using D16 = hn::Rebind<uint16_t, DF>;  // half as wide: one 16-bit lane per float lane
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;
using V16 = hn::Vec<D16>;

// Lanes where a > b, for values below 2^31 (signed compares order them; Highway
// 1.0.3 has no unsigned Gt on every target).
HWY_INLINE hn::Mask<DU> Above(VU a, uint32_t b) {
  const DI di;
  return hn::RebindMask(DU(), hn::Gt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(b))));
}
HWY_INLINE hn::Mask<DU> Below(VU a, uint32_t b) {
  const DI di;
  return hn::RebindMask(DU(), hn::Gt(hn::Set(di, static_cast<int32_t>(b)), hn::BitCast(di, a)));
}
HWY_INLINE V16 Narrow(VU bits16) { return hn::DemoteTo(D16(), hn::BitCast(DI(), bits16)); }  // each lane < 2^16

// Half::from_float: the cases in the scalar's order of precedence (the later
// select wins), each computed on every lane.
HWY_INLINE V16 FloatToHalf(VF f) {
  const DF df;
  const DU du;
#if HWY_TARGET <= HWY_AVX2
  // These targets have F16C: vcvtps2ph rounds to nearest even, overflows to
  // inf and rounds subnormals as the scalar does, one instruction where the
  // integer-lane algorithm below takes many. A NaN it keeps the
  // payload of; it is first replaced by the one NaN whose conversion is the
  // scalar's 0x7e00 (with the sign): the quiet bit alone.
  const VU sign_bit = hn::And(hn::BitCast(du, f), hn::Set(du, 0x80000000u));
  const VF quiet_nan = hn::BitCast(df, hn::Or(sign_bit, hn::Set(du, 0x7fc00000u)));
  const auto halves = hn::DemoteTo(hn::Rebind<hwy::float16_t, DF>(), hn::IfThenElse(hn::IsNaN(f), quiet_nan, f));
  return hn::BitCast(D16(), halves);
#else
  const VU x = hn::BitCast(du, f);
  const VU sign = hn::And(hn::ShiftRight<16>(x), hn::Set(du, 0x8000u));
  const VU abs = hn::And(x, hn::Set(du, 0x7fffffffu));
  // Normal in half: rebias the exponent (-112 << 23) and round to nearest even.
  const VU odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 1u));
  VU h = hn::ShiftRight<13>(hn::Add(hn::Add(abs, hn::Set(du, 0xc8000fffu)), odd));
  // Subnormal or zero in half: adding 0.5 has the FPU round the shifted mantissa.
  const VU sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))), hn::Set(du, 0x3f000000u));
  h = hn::IfThenElse(Below(abs, 0x38800000u), sub, h);
  h = hn::IfThenElse(Above(abs, 0x477ff000u - 1), hn::Set(du, 0x7c00u), h);  // overflow and inf
  h = hn::IfThenElse(Above(abs, 0x7f800000u), hn::Set(du, 0x7e00u), h);  // NaN
  return Narrow(hn::Or(h, sign));
#endif
}

// Half::to_float.
HWY_INLINE VF HalfToFloat(V16 h16) {
  const DF df;
  const DU du;
  const VU h = hn::PromoteTo(du, h16);
  const VU sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const VU exp_mant = hn::And(h, hn::Set(du, 0x7fffu));
  const VU mant = hn::And(h, hn::Set(du, 0x3ffu));
  VU f = hn::Add(hn::ShiftLeft<13>(exp_mant), hn::Set(du, 112u << 23));  // normal: rebias
  // Subnormal: mant * 2^-24, exact in float.
  const VU sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(DI(), mant)), hn::Set(df, 1.0f / 16777216.0f)));
  const VU inf_nan = hn::Or(hn::Set(du, 0x7f800000u), hn::ShiftLeft<13>(mant));  // payload kept as is
  f = hn::IfThenElse(Below(exp_mant, 0x400u), sub, f);
  f = hn::IfThenElse(Above(exp_mant, 0x7c00u - 1), inf_nan, f);
  return hn::BitCast(df, hn::Or(f, sign));
}

// BFloat16::from_float.
HWY_INLINE V16 FloatToBFloat16(VF f) {
  const DU du;
  const VU x = hn::BitCast(du, f);
  const VU odd = hn::And(hn::ShiftRight<16>(x), hn::Set(du, 1u));
  VU b = hn::ShiftRight<16>(hn::Add(hn::Add(x, hn::Set(du, 0x7fffu)), odd));
  const VU quiet_nan = hn::Or(hn::ShiftRight<16>(x), hn::Set(du, 0x40u));
  b = hn::IfThenElse(Above(hn::And(x, hn::Set(du, 0x7fffffffu)), 0x7f800000u), quiet_nan, b);
  return Narrow(b);
}

HWY_INLINE VF BFloat16ToFloat(V16 b) { return hn::BitCast(DF(), hn::ShiftLeft<16>(hn::PromoteTo(DU(), b))); }

// out[i] = f(in[i]) for fewer than one vector of elements, through buffers
// of one vector, so that no load or store reaches past the arrays.
template <class To, class From, class DTo, class DFrom, class F>
HWY_INLINE void MapPartial(DTo dto, DFrom dfrom, To* HWY_RESTRICT out, const From* HWY_RESTRICT in, int64_t n, F f) {
  HWY_ALIGN From src[hn::MaxLanes(dfrom)] = {};
  HWY_ALIGN To dst[hn::MaxLanes(dfrom)];
  for (int64_t k = 0; k < n; ++k) src[k] = in[k];
  hn::Store(f(hn::Load(dfrom, src)), dto, dst);
  for (int64_t k = 0; k < n; ++k) out[k] = dst[k];
}

// out[i] = f(in[i]) a vector at a time, the input asked for a page ahead;
// with stream, a float out is written with streaming stores from its first
// vector boundary on (vector_math.h, stream_output; the same reasons as the
// maps'). A 16-bit out fills half a vector per step, and Highway streams
// whole vectors only (SSE4: 16 bytes for an 8-byte half), so it is stored
// plainly.
template <class To, class From, class DTo, class DFrom, class F>
HWY_INLINE void Map(DTo dto, DFrom dfrom, To* HWY_RESTRICT out, const From* HWY_RESTRICT in, int64_t n, bool stream,
                    F f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(dfrom));
  int64_t i = 0;
  if (stream && sizeof(To) == sizeof(float)) {
    const int64_t head = ElementsBeforeAlignment(out, L * static_cast<int64_t>(sizeof(To)), sizeof(To), n);
    if (head > 0) MapPartial(dto, dfrom, out, in, head, f);
    for (i = head; i + L <= n; i += L) {
      PrefetchAhead(in + i, L);
      hn::Stream(f(hn::LoadU(dfrom, in + i)), dto, out + i);
    }
    hwy::FlushStream();  // the streamed lines reach memory before the threads join
  } else {
    for (; i + L <= n; i += L) {
      PrefetchAhead(in + i, L);
      hn::StoreU(f(hn::LoadU(dfrom, in + i)), dto, out + i);
    }
  }
  if (i < n) MapPartial(dto, dfrom, out + i, in + i, n - i, f);
}

void FloatToHalfArray(uint16_t* out, const float* in, int64_t n, bool stream) {
  Map(D16(), DF(), out, in, n, stream, [](VF v) { return FloatToHalf(v); });
}
void HalfToFloatArray(float* out, const uint16_t* in, int64_t n, bool stream) {
  Map(DF(), D16(), out, in, n, stream, [](V16 v) { return HalfToFloat(v); });
}
void FloatToBFloat16Array(uint16_t* out, const float* in, int64_t n, bool stream) {
  Map(D16(), DF(), out, in, n, stream, [](VF v) { return FloatToBFloat16(v); });
}
void BFloat16ToFloatArray(float* out, const uint16_t* in, int64_t n, bool stream) {
  Map(DF(), D16(), out, in, n, stream, [](V16 v) { return BFloat16ToFloat(v); });
}

const char* ConvertTargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace anvil::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace anvil::cpu::vec {

HWY_EXPORT(FloatToHalfArray);
HWY_EXPORT(HalfToFloatArray);
HWY_EXPORT(FloatToBFloat16Array);
HWY_EXPORT(BFloat16ToFloatArray);
HWY_EXPORT(ConvertTargetName);

// Half and BFloat16 are their uint16_t bits and nothing else.
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

void convert(Half* out, const float* in, int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(FloatToHalfArray)(reinterpret_cast<uint16_t*>(out), in, n, stream);
}
void convert(float* out, const Half* in, int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(HalfToFloatArray)(out, reinterpret_cast<const uint16_t*>(in), n, stream);
}
void convert(BFloat16* out, const float* in, int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(FloatToBFloat16Array)(reinterpret_cast<uint16_t*>(out), in, n, stream);
}
void convert(float* out, const BFloat16* in, int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(BFloat16ToFloatArray)(out, reinterpret_cast<const uint16_t*>(in), n, stream);
}

void for_each_target(const std::function<void(const char* target)>& f) {
  struct Restore {
    ~Restore() { hwy::SetSupportedTargetsForTest(0); }
  } restore;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    f(HWY_DYNAMIC_DISPATCH(ConvertTargetName)());
  }
}

}  // namespace anvil::cpu::vec
#endif  // HWY_ONCE

#else  // !ANVIL_HAVE_HIGHWAY: the scalar conversions

namespace anvil::cpu::vec {
namespace {
template <typename To, typename From> void convert_each(To* out, const From* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = To(static_cast<float>(in[i]));
}
}  // namespace

void convert(Half* out, const float* in, int64_t n, bool) { convert_each(out, in, n); }
void convert(float* out, const Half* in, int64_t n, bool) { convert_each(out, in, n); }
void convert(BFloat16* out, const float* in, int64_t n, bool) { convert_each(out, in, n); }
void convert(float* out, const BFloat16* in, int64_t n, bool) { convert_each(out, in, n); }
void for_each_target(const std::function<void(const char* target)>& f) { f("scalar"); }

}  // namespace anvil::cpu::vec

#endif  // ANVIL_HAVE_HIGHWAY
