// The row half of vector_math.h: softmax, layer_norm, rms_norm and the
// reductions over contiguous floats. Every sum runs in four independent
// vectors of lanes (no dependency chain between consecutive adds): float
// lanes within a row of softmax or a norm, added in double at the end of the
// row or of each kBlock elements; double lanes for the sum, mean and var
// reductions, which are the reference for long sums.
#include "kernels/cpu/vector_math.h"

#if ANVIL_HAVE_HIGHWAY

#include "kernels/cpu/highway_targets.h"  // before any Highway header

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/vector_rows.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>

#include "hwy/highway.h"
#include "kernels/cpu/vector_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace anvil::cpu::vec::HWY_NAMESPACE {

constexpr int64_t kBlock = 2048;  // elements summed in float lanes before the partial goes to double

HWY_INLINE double LaneSum(D d, V v) { return static_cast<double>(hn::GetLane(hn::SumOfLanes(d, v))); }

// The tail [i, n) of a row as one vector, `fill` in the lanes past n.
HWY_INLINE V LoadTail(D d, const float* p, int64_t count, float fill) {
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  for (size_t k = 0; k < hn::Lanes(d); ++k) buf[k] = static_cast<int64_t>(k) < count ? p[k] : fill;
  return hn::Load(d, buf);
}
HWY_INLINE void StoreTail(D d, V v, float* p, int64_t count) {
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  hn::Store(v, d, buf);
  for (int64_t k = 0; k < count; ++k) p[k] = buf[k];
}

// sum over i of f(i-th vector of the inputs), f returning zero for padding
// lanes (each call site's f gives 0 for the fill values it passes).
template <class F>
HWY_INLINE double SumOver(D d, int64_t n, float fill, const float* a, F f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t b1 = n - b0 < kBlock ? n : b0 + kBlock;
    V s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    int64_t i = b0;
    for (; i + 4 * L <= b1; i += 4 * L) {
      s0 = hn::Add(s0, f(hn::LoadU(d, a + i), i));
      s1 = hn::Add(s1, f(hn::LoadU(d, a + i + L), i + L));
      s2 = hn::Add(s2, f(hn::LoadU(d, a + i + 2 * L), i + 2 * L));
      s3 = hn::Add(s3, f(hn::LoadU(d, a + i + 3 * L), i + 3 * L));
    }
    for (; i + L <= b1; i += L) s0 = hn::Add(s0, f(hn::LoadU(d, a + i), i));
    if (i < b1) s1 = hn::Add(s1, f(LoadTail(d, a + i, b1 - i, fill), i));
    total += LaneSum(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
  }
  return total;
}

// max (or min) with NaN winning, as the scalar reductions.
template <bool kMax>
float Extreme(const float* x, int64_t n) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float fill = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  auto pick = [](V a, V b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  V m0 = hn::Set(d, fill), m1 = m0, m2 = m0, m3 = m0;
  auto nan = hn::Lt(m0, m0);  // all false
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const V a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + L);
    const V c = hn::LoadU(d, x + i + 2 * L), e = hn::LoadU(d, x + i + 3 * L);
    nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Or(hn::IsNaN(c), hn::IsNaN(e))));
    m0 = pick(m0, a), m1 = pick(m1, b), m2 = pick(m2, c), m3 = pick(m3, e);
  }
  for (; i + L <= n; i += L) {
    const V a = hn::LoadU(d, x + i);
    nan = hn::Or(nan, hn::IsNaN(a));
    m0 = pick(m0, a);
  }
  if (i < n) {
    const V a = LoadTail(d, x + i, n - i, fill);
    nan = hn::Or(nan, hn::IsNaN(a));
    m1 = pick(m1, a);
  }
  if (!hn::AllFalse(d, nan)) return std::numeric_limits<float>::quiet_NaN();
  const V m = pick(pick(m0, m1), pick(m2, m3));
  return hn::GetLane(kMax ? hn::MaxOfLanes(d, m) : hn::MinOfLanes(d, m));
}

// The reductions' sums accumulate in double lanes (four vectors of them, no
// chain): float lanes lose 1e-5 of a cancelling 8000-element row sum, more
// than the float64-reference tests allow, and the widening is free next to
// the memory traffic. f maps the promoted values (in double) to the addends.
template <class F>
HWY_INLINE double SumPromoted(const float* x, int64_t n, F f) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  using VD = hn::Vec<decltype(dd)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
  VD s0 = hn::Zero(dd), s1 = hn::Zero(dd), s2 = hn::Zero(dd), s3 = hn::Zero(dd);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = hn::Add(s0, f(dd, hn::PromoteTo(dd, hn::LoadU(df, x + i))));
    s1 = hn::Add(s1, f(dd, hn::PromoteTo(dd, hn::LoadU(df, x + i + L))));
    s2 = hn::Add(s2, f(dd, hn::PromoteTo(dd, hn::LoadU(df, x + i + 2 * L))));
    s3 = hn::Add(s3, f(dd, hn::PromoteTo(dd, hn::LoadU(df, x + i + 3 * L))));
  }
  for (; i + L <= n; i += L) s0 = hn::Add(s0, f(dd, hn::PromoteTo(dd, hn::LoadU(df, x + i))));
  double total = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) total += hn::GetLane(f(dd, hn::Set(dd, static_cast<double>(x[i]))));
  return total;
}

double Sum(const float* x, int64_t n) {
  return SumPromoted(x, n, [](auto, auto v) { return v; });
}
float Max(const float* x, int64_t n) { return Extreme<true>(x, n); }
float Min(const float* x, int64_t n) { return Extreme<false>(x, n); }

Moments MomentsOf(const float* x, int64_t n) {
  const double mean = Sum(x, n) / static_cast<double>(n);
  const double m2 = SumPromoted(x, n, [mean](auto dd, auto v) {
    const auto dv = hn::Sub(v, hn::Set(dd, mean));
    return hn::Mul(dv, dv);
  });
  return {mean, m2};
}

// One input row of a column reduction (a sum or max over the first dim):
// acc[j] = fold(acc[j], x[j]), the floats promoted to the double
// accumulators. Each column still folds its rows in order, so the result is
// the scalar loop's, bit for bit; only the columns go side by side.
template <class F>
HWY_INLINE void FoldRowInto(double* acc, const float* x, int64_t n, F fold) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
  int64_t j = 0;
  for (; j + 2 * L <= n; j += 2 * L) {
    const auto a = fold(dd, hn::LoadU(dd, acc + j), hn::PromoteTo(dd, hn::LoadU(df, x + j)));
    const auto b = fold(dd, hn::LoadU(dd, acc + j + L), hn::PromoteTo(dd, hn::LoadU(df, x + j + L)));
    hn::StoreU(a, dd, acc + j);
    hn::StoreU(b, dd, acc + j + L);
  }
  for (; j + L <= n; j += L)
    hn::StoreU(fold(dd, hn::LoadU(dd, acc + j), hn::PromoteTo(dd, hn::LoadU(df, x + j))), dd, acc + j);
  for (; j < n; ++j)
    acc[j] = hn::GetLane(fold(dd, hn::Set(dd, acc[j]), hn::Set(dd, static_cast<double>(x[j]))));
}

void AddRowInto(double* acc, const float* x, int64_t n) {
  FoldRowInto(acc, x, n, [](auto, auto a, auto v) { return hn::Add(a, v); });
}
// A NaN sticks: once acc is NaN no comparison is true; a NaN input is taken.
template <bool kMax>
void ExtremeRowInto(double* acc, const float* x, int64_t n) {
  FoldRowInto(acc, x, n, [](auto, auto a, auto v) {
    return hn::IfThenElse(hn::Or(kMax ? hn::Gt(v, a) : hn::Lt(v, a), hn::IsNaN(v)), v, a);
  });
}
void MaxRowInto(double* acc, const float* x, int64_t n) { ExtremeRowInto<true>(acc, x, n); }
void MinRowInto(double* acc, const float* x, int64_t n) { ExtremeRowInto<false>(acc, x, n); }

// Row statistics (layer_norm): float lanes, added in double per row or block.
Moments RowMoments(const float* x, int64_t n) {
  const D d;
  const double mean = SumOver(d, n, 0.0f, x, [](V v, int64_t) { return v; }) / static_cast<double>(n);
  const V m = hn::Set(d, static_cast<float>(mean));
  // Padding lanes hold the mean: their deviation is 0.
  const double m2 = SumOver(d, n, static_cast<float>(mean), x, [m](V v, int64_t) {
    const V dv = hn::Sub(v, m);
    return hn::Mul(dv, dv);
  });
  return {mean, m2};
}

// y[i] = f(x[i], i) over a row (f gets the element index of the vector's first lane).
template <class F>
HWY_INLINE void MapRow(D d, float* y, const float* x, int64_t n, F f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(f(hn::LoadU(d, x + i), i), d, y + i);
  if (i < n) StoreTail(d, f(LoadTail(d, x + i, n - i, 0.0f), i), y + i, n - i);
}
// Loads of a second row (weights, gradients) at the index MapRow passes.
HWY_INLINE V At(D d, const float* p, int64_t i, int64_t n, float fill) {
  return i + static_cast<int64_t>(hn::Lanes(d)) <= n ? hn::LoadU(d, p + i) : LoadTail(d, p + i, n - i, fill);
}

// row[i] = keep[i] ? row[i] : fill, keep holding bytes 0 or 1 (bool).
void SelectRow(float* row, const uint8_t* keep, int64_t n, float fill) {
  const D d;
  const hn::RebindToUnsigned<D> du;
  const hn::Rebind<uint8_t, D> d8;
  const V f = hn::Set(d, fill);
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto dropped = hn::RebindMask(d, hn::Eq(hn::PromoteTo(du, hn::LoadU(d8, keep + i)), hn::Zero(du)));
    hn::StoreU(hn::IfThenElse(dropped, f, hn::LoadU(d, row + i)), d, row + i);
  }
  for (; i < n; ++i) row[i] = keep[i] ? row[i] : fill;
}

// y[i] = exp(x[i] - shift) over a row (y may equal x); returns the sum of the
// exps, in float lanes added in double every kBlock elements.
double ExpShiftedRow(float* y, const float* x, int64_t n, float shift) {
  const D d;
  const V mx = hn::Set(d, shift);
  V s0 = hn::Zero(d), s1 = hn::Zero(d);
  double sum = 0;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const V e0 = ExpF(d, hn::Sub(hn::LoadU(d, x + i), mx));
    const V e1 = ExpF(d, hn::Sub(hn::LoadU(d, x + i + L), mx));
    hn::StoreU(e0, d, y + i);
    hn::StoreU(e1, d, y + i + L);
    s0 = hn::Add(s0, e0), s1 = hn::Add(s1, e1);
    if ((i + 2 * L) % kBlock == 0) {
      sum += LaneSum(d, hn::Add(s0, s1));
      s0 = hn::Zero(d), s1 = hn::Zero(d);
    }
  }
  for (; i < n; i += L) {
    const int64_t count = n - i < L ? n - i : L;
    const V e = ExpF(d, hn::Sub(LoadTail(d, x + i, count, -std::numeric_limits<float>::infinity()), mx));
    StoreTail(d, e, y + i, count);
    s0 = hn::Add(s0, e);
  }
  return sum + LaneSum(d, hn::Add(s0, s1));
}

void SoftmaxRow(float* y, const float* x, int64_t n, bool log) {
  const D d;
  const float max = Max(x, n);  // NaN if the row has one: the row is NaN, as the scalar kernel's
  if (log) {
    const V mx = hn::Set(d, max);
    // Padding lanes: exp(-inf - max) = 0.
    const double sum = SumOver(d, n, -std::numeric_limits<float>::infinity(), x,
                               [&](V v, int64_t) { return ExpF(d, hn::Sub(v, mx)); });
    const V log_sum = hn::Set(d, static_cast<float>(std::log(sum)));
    // (x - max) - log(sum), not x - (max + log(sum)): large logits keep their precision.
    MapRow(d, y, x, n, [&](V v, int64_t) { return hn::Sub(hn::Sub(v, mx), log_sum); });
    return;
  }
  // Keep the exps in y, then scale.
  const V inv = hn::Set(d, static_cast<float>(1.0 / ExpShiftedRow(y, x, n, max)));
  MapRow(d, y, y, n, [&](V v, int64_t) { return hn::Mul(v, inv); });
}

void SoftmaxBackwardRow(float* gi, const float* g, const float* y, int64_t n, bool log) {
  const D d;
  if (log) {
    const V s = hn::Set(d, static_cast<float>(SumOver(d, n, 0.0f, g, [](V v, int64_t) { return v; })));
    MapRow(d, gi, g, n, [&](V gv, int64_t i) { return hn::NegMulAdd(ExpF(d, At(d, y, i, n, 0.0f)), s, gv); });
    return;
  }
  const V dot = hn::Set(d, static_cast<float>(SumOver(d, n, 0.0f, g, [&](V gv, int64_t i) {
                          return hn::Mul(gv, At(d, y, i, n, 0.0f));
                        })));
  MapRow(d, gi, g, n, [&](V gv, int64_t i) { return hn::Mul(At(d, y, i, n, 0.0f), hn::Sub(gv, dot)); });
}

RowStats LayerNormRow(float* y, const float* x, const float* w, const float* b, int64_t n, double eps) {
  const D d;
  const Moments mo = RowMoments(x, n);
  const double rstd = 1.0 / std::sqrt(mo.m2 / static_cast<double>(n) + eps);
  const V m = hn::Set(d, static_cast<float>(mo.mean)), r = hn::Set(d, static_cast<float>(rstd));
  MapRow(d, y, x, n, [&](V v, int64_t i) {
    V o = hn::Mul(hn::Sub(v, m), r);
    if (w) o = hn::Mul(o, At(d, w, i, n, 0.0f));
    if (b) o = hn::Add(o, At(d, b, i, n, 0.0f));
    return o;
  });
  return {mo.mean, rstd};
}

void LayerNormBackwardRow(float* gi, const float* g, const float* x, const float* w, int64_t n, float mean,
                          float rstd) {
  const D d;
  const V m = hn::Set(d, mean), r = hn::Set(d, rstd);
  auto gw = [&](V gv, int64_t i) { return w ? hn::Mul(gv, At(d, w, i, n, 0.0f)) : gv; };
  // Padding lanes of g are 0, so both sums ignore them.
  const double sum_gy = SumOver(d, n, 0.0f, g, gw);
  const double sum_gy_xhat = SumOver(d, n, 0.0f, g, [&](V gv, int64_t i) {
    return hn::Mul(gw(gv, i), hn::Mul(hn::Sub(At(d, x, i, n, mean), m), r));
  });
  const V mean_gy = hn::Set(d, static_cast<float>(sum_gy / static_cast<double>(n)));
  const V mean_gy_xhat = hn::Set(d, static_cast<float>(sum_gy_xhat / static_cast<double>(n)));
  MapRow(d, gi, g, n, [&](V gv, int64_t i) {
    const V xhat = hn::Mul(hn::Sub(At(d, x, i, n, mean), m), r);
    return hn::Mul(r, hn::Sub(hn::Sub(gw(gv, i), mean_gy), hn::Mul(xhat, mean_gy_xhat)));
  });
}

double RmsNormRow(float* y, const float* x, const float* w, int64_t n, double eps) {
  const D d;
  const double sq = SumOver(d, n, 0.0f, x, [](V v, int64_t) { return hn::Mul(v, v); });
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
  const V r = hn::Set(d, static_cast<float>(rstd));
  MapRow(d, y, x, n, [&](V v, int64_t i) {
    const V o = hn::Mul(v, r);
    return w ? hn::Mul(o, At(d, w, i, n, 0.0f)) : o;
  });
  return rstd;
}

// r recomputed exactly as RmsNormRow computes it, then (gi non-null)
// gi = r * g w - x * (r^3 * mean(g w x)).
double RmsNormBackwardRow(float* gi, const float* g, const float* x, const float* w, int64_t n, double eps) {
  const D d;
  const double sq = SumOver(d, n, 0.0f, x, [](V v, int64_t) { return hn::Mul(v, v); });
  const double r = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
  if (!gi) return r;
  auto gw = [&](V gv, int64_t i) { return w ? hn::Mul(gv, At(d, w, i, n, 0.0f)) : gv; };
  // Padding lanes of g are 0, so the sum ignores them.
  const double dot = SumOver(d, n, 0.0f, g, [&](V gv, int64_t i) { return hn::Mul(gw(gv, i), At(d, x, i, n, 0.0f)); });
  const V rv = hn::Set(d, static_cast<float>(r));
  const V c = hn::Set(d, static_cast<float>(r * r * r * dot / static_cast<double>(n)));
  MapRow(d, gi, g, n, [&](V gv, int64_t i) { return hn::Sub(hn::Mul(rv, gw(gv, i)), hn::Mul(At(d, x, i, n, 0.0f), c)); });
  return r;
}

}  // namespace anvil::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace anvil::cpu::vec {

HWY_EXPORT(SelectRow);
HWY_EXPORT(ExpShiftedRow);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(SoftmaxBackwardRow);
HWY_EXPORT(LayerNormRow);
HWY_EXPORT(LayerNormBackwardRow);
HWY_EXPORT(RmsNormRow);
HWY_EXPORT(RmsNormBackwardRow);
HWY_EXPORT(Sum);
HWY_EXPORT(Max);
HWY_EXPORT(Min);
HWY_EXPORT(MomentsOf);
HWY_EXPORT(AddRowInto);
HWY_EXPORT(MaxRowInto);
HWY_EXPORT(MinRowInto);

double exp_shifted_row(float* y, const float* x, int64_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftedRow)(y, x, n, shift);
}
void select_row(float* row, const uint8_t* keep, int64_t n, float fill) {
  HWY_DYNAMIC_DISPATCH(SelectRow)(row, keep, n, fill);
}
void softmax_row(float* y, const float* x, int64_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRow)(y, x, n, log); }
void softmax_backward_row(float* gi, const float* g, const float* y, int64_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxBackwardRow)(gi, g, y, n, log);
}
RowStats layer_norm_row(float* y, const float* x, const float* w, const float* b, int64_t n, double eps) {
  return HWY_DYNAMIC_DISPATCH(LayerNormRow)(y, x, w, b, n, eps);
}
void layer_norm_backward_row(float* gi, const float* g, const float* x, const float* w, int64_t n, float mean,
                             float rstd) {
  HWY_DYNAMIC_DISPATCH(LayerNormBackwardRow)(gi, g, x, w, n, mean, rstd);
}
double rms_norm_row(float* y, const float* x, const float* w, int64_t n, double eps) {
  return HWY_DYNAMIC_DISPATCH(RmsNormRow)(y, x, w, n, eps);
}
double rms_norm_backward_row(float* gi, const float* g, const float* x, const float* w, int64_t n, double eps) {
  return HWY_DYNAMIC_DISPATCH(RmsNormBackwardRow)(gi, g, x, w, n, eps);
}
double sum(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Sum)(x, n); }
float max(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Max)(x, n); }
float min(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Min)(x, n); }
Moments moments(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(MomentsOf)(x, n); }
void add_row_into(double* acc, const float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(AddRowInto)(acc, x, n); }
void max_row_into(double* acc, const float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(MaxRowInto)(acc, x, n); }
void min_row_into(double* acc, const float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(MinRowInto)(acc, x, n); }

}  // namespace anvil::cpu::vec
#endif  // HWY_ONCE

#else  // !ANVIL_HAVE_HIGHWAY: never called (enabled() is false); defined so that callers link.

#include "core/base/error.h"

namespace anvil::cpu::vec {
namespace {
[[noreturn]] void absent() { fail("cpu vector kernels: built without Highway"); }
}  // namespace
double exp_shifted_row(float*, const float*, int64_t, float) { absent(); }
void select_row(float*, const uint8_t*, int64_t, float) { absent(); }
void softmax_row(float*, const float*, int64_t, bool) { absent(); }
void softmax_backward_row(float*, const float*, const float*, int64_t, bool) { absent(); }
RowStats layer_norm_row(float*, const float*, const float*, const float*, int64_t, double) { absent(); }
void layer_norm_backward_row(float*, const float*, const float*, const float*, int64_t, float, float) { absent(); }
double rms_norm_row(float*, const float*, const float*, int64_t, double) { absent(); }
double rms_norm_backward_row(float*, const float*, const float*, const float*, int64_t, double) { absent(); }
double sum(const float*, int64_t) { absent(); }
float max(const float*, int64_t) { absent(); }
float min(const float*, int64_t) { absent(); }
Moments moments(const float*, int64_t) { absent(); }
void add_row_into(double*, const float*, int64_t) { absent(); }
void max_row_into(double*, const float*, int64_t) { absent(); }
void min_row_into(double*, const float*, int64_t) { absent(); }
}  // namespace anvil::cpu::vec

#endif  // ANVIL_HAVE_HIGHWAY
