// The row half of vector_math.h: softmax, layer_norm, rms_norm and the
// reductions over contiguous floats. Every sum runs in four independent
// vectors of lanes (no dependency chain between consecutive adds): float
// lanes, added in double at the end of the row or of each kBlock elements.
#include "kernels/cpu/vector_math.h"

#if ANVIL_HAVE_HIGHWAY

#include "kernels/cpu/highway_targets.h"  // before any Highway header

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/vector_rows.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "hwy/cache_control.h"

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

// Asks for the cache lines of p[0, count), one prefetch per line.
HWY_INLINE void PrefetchLines(const float* p, int64_t count) {
  for (int64_t k = 0; k < count; k += 16) __builtin_prefetch(p + k);
}

// sum over i of f(i-th vector of the inputs), f returning zero for padding
// lanes (each call site's f gives 0 for the fill values it passes). Prefetches
// a, and also_read (a second row f or the next pass reads) when given.
template <class F>
HWY_INLINE double SumOver(D d, int64_t n, float fill, const float* a, F f, const float* also_read = nullptr) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t b1 = n - b0 < kBlock ? n : b0 + kBlock;
    V s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    int64_t i = b0;
    for (; i + 4 * L <= b1; i += 4 * L) {
      PrefetchAhead(a + i, 4 * L);
      if (also_read) PrefetchAhead(also_read + i, 4 * L);
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
template <bool kMax> float Extreme(const float* x, int64_t n) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float fill = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  auto pick = [](V a, V b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  V m0 = hn::Set(d, fill), m1 = m0, m2 = m0, m3 = m0;
  auto nan = hn::Lt(m0, m0);  // all false
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    PrefetchAhead(x + i, 4 * L);
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

// The sum reductions add float lanes over blocks of kBlock elements and the
// blocks in double (SumOver), as softmax and the norms do: each lane adds
// kBlock / 64 elements, so the error stays within a few units of roundoff
// of sum |x| (the tests' bound), and the loop runs at max's speed; double
// lanes were bound by their float-to-double conversions at half of it.
double Sum(const float* x, int64_t n) {
  const D d;
  return SumOver(d, n, 0.0f, x, [](V v, int64_t) { return v; });
}
float Max(const float* x, int64_t n) { return Extreme<true>(x, n); }
float Min(const float* x, int64_t n) { return Extreme<false>(x, n); }

// A run of rows of a column reduction (over the first dim), folded into the
// double accumulators acc[0, n): the rows go into a float buffer (one vector
// load, op and store per element, streaming each row), and the buffer into
// acc every rows_per_flush rows. Sums thus add at most that many rows in
// float; max and min are exact in float, so they flush once per run.
constexpr int64_t kColumnTile = 1024;  // floats of the buffer: 4 KiB, in L1
template <class FoldF, class FoldD>
HWY_INLINE void FoldRowsInto(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n,
                             int64_t rows_per_flush, FoldF fold, FoldD fold_double) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  HWY_ALIGN float buf[kColumnTile];
  for (int64_t c0 = 0; c0 < n; c0 += kColumnTile) {
    const int64_t cn = std::min(kColumnTile, n - c0);
    for (int64_t r0 = 0; r0 < rows; r0 += rows_per_flush) {
      const int64_t r1 = std::min(rows, r0 + rows_per_flush);
      std::copy_n(x + r0 * row_stride + c0, cn, buf);
      for (int64_t r = r0 + 1; r < r1; ++r) {
        const float* row = x + r * row_stride + c0;
        int64_t j = 0;
        for (; j + L <= cn; j += L) hn::Store(fold(hn::Load(d, buf + j), hn::LoadU(d, row + j)), d, buf + j);
        for (; j < cn; ++j) buf[j] = hn::GetLane(fold(hn::Set(d, buf[j]), hn::Set(d, row[j])));
      }
      for (int64_t j = 0; j < cn; ++j) acc[c0 + j] = fold_double(acc[c0 + j], static_cast<double>(buf[j]));
    }
  }
}

// Column sums add 16 rows in float before the double accumulators.
void AddRowsInto(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  FoldRowsInto(
      acc, x, rows, row_stride, n, 16, [](V a, V v) { return hn::Add(a, v); },
      [](double a, double v) { return a + v; });
}
// A NaN sticks: once the running value is NaN no comparison is true; a NaN input is taken.
template <bool kMax> void ExtremeRowsInto(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  auto take = [](auto a, auto v) { return (kMax ? v > a : v < a) || v != v; };
  FoldRowsInto(
      acc, x, rows, row_stride, n, rows,
      [](V a, V v) { return hn::IfThenElse(hn::Or(kMax ? hn::Gt(v, a) : hn::Lt(v, a), hn::IsNaN(v)), v, a); },
      [take](double a, double v) { return take(a, v) ? v : a; });
}
void MaxRowsInto(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  ExtremeRowsInto<true>(acc, x, rows, row_stride, n);
}
void MinRowsInto(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  ExtremeRowsInto<false>(acc, x, rows, row_stride, n);
}

// Column moments of a run of rows, in float tiles of columns, from each
// column's sums of differences d from a shift: mean = shift + sum(d) / rows
// and m2 = sum(d^2) - sum(d)^2 / rows. Differences are small numbers next
// to data with a large offset, and keep its digits. Given a center (the
// mean of the rows before this run) the shift is that, and the run is read
// once: a second pass from the cache left memory idle. Four rows a step
// (below) keep the sums' loads and stores from binding the loop. A first
// run has no center: its shift is its own mean, found in a pass of
// differences from its first row.
void ColumnMoments(double* mean, double* m2, const float* x, int64_t rows, int64_t row_stride, int64_t n,
                   const double* center) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  HWY_ALIGN float shift[kColumnTile], s1[kColumnTile], s2[kColumnTile];
  const double inv_rows = 1.0 / static_cast<double>(rows);
  for (int64_t c0 = 0; c0 < n; c0 += kColumnTile) {
    const int64_t cn = std::min(kColumnTile, n - c0);
    const float* tile = x + c0;
    if (center) {
      for (int64_t j = 0; j < cn; ++j) shift[j] = static_cast<float>(center[c0 + j]);
    } else {
      std::copy_n(tile, cn, shift);
      std::fill_n(s1, cn, 0.0f);
      for (int64_t r = 1; r < rows; ++r) {
        const float* row = tile + r * row_stride;
        int64_t j = 0;
        for (; j + L <= cn; j += L)
          hn::Store(hn::Add(hn::Load(d, s1 + j), hn::Sub(hn::LoadU(d, row + j), hn::Load(d, shift + j))), d, s1 + j);
        for (; j < cn; ++j) s1[j] += row[j] - shift[j];
      }
      for (int64_t j = 0; j < cn; ++j)
        shift[j] = static_cast<float>(static_cast<double>(shift[j]) + static_cast<double>(s1[j]) * inv_rows);
    }
    std::fill_n(s1, cn, 0.0f);
    std::fill_n(s2, cn, 0.0f);
    // Four rows at a time: the sums' loads and stores, not the data's,
    // had bound the loop.
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      const float* row = tile + r * row_stride;
      int64_t j = 0;
      for (; j + L <= cn; j += L) {
        const V sh = hn::Load(d, shift + j);
        const V d0 = hn::Sub(hn::LoadU(d, row + j), sh), d1 = hn::Sub(hn::LoadU(d, row + row_stride + j), sh);
        const V d2 = hn::Sub(hn::LoadU(d, row + 2 * row_stride + j), sh);
        const V d3 = hn::Sub(hn::LoadU(d, row + 3 * row_stride + j), sh);
        hn::Store(hn::Add(hn::Load(d, s1 + j), hn::Add(hn::Add(d0, d1), hn::Add(d2, d3))), d, s1 + j);
        const V q = hn::MulAdd(d0, d0, hn::MulAdd(d1, d1, hn::MulAdd(d2, d2, hn::Mul(d3, d3))));
        hn::Store(hn::Add(hn::Load(d, s2 + j), q), d, s2 + j);
      }
      for (; j < cn; ++j)
        for (int64_t i = 0; i < 4; ++i) {
          const float dv = row[i * row_stride + j] - shift[j];
          s1[j] += dv;
          s2[j] += dv * dv;
        }
    }
    for (; r < rows; ++r) {
      const float* row = tile + r * row_stride;
      int64_t j = 0;
      for (; j + L <= cn; j += L) {
        const V dv = hn::Sub(hn::LoadU(d, row + j), hn::Load(d, shift + j));
        hn::Store(hn::Add(hn::Load(d, s1 + j), dv), d, s1 + j);
        hn::Store(hn::MulAdd(dv, dv, hn::Load(d, s2 + j)), d, s2 + j);
      }
      for (; j < cn; ++j) {
        const float dv = row[j] - shift[j];
        s1[j] += dv;
        s2[j] += dv * dv;
      }
    }
    for (int64_t j = 0; j < cn; ++j) {
      const double sum = static_cast<double>(s1[j]);
      mean[c0 + j] = static_cast<double>(shift[j]) + sum * inv_rows;
      const double deviations = static_cast<double>(s2[j]) - sum * sum * inv_rows;
      m2[c0 + j] = deviations < 0 ? 0.0 : deviations;  // NaN stays NaN
    }
  }
}

// The mean, then the squared deviations from the float-rounded mean (of
// data with a large offset they are small numbers, and keep its digits),
// both in float lanes added in double per block, the second corrected by
// n (mean - float mean)^2: layer_norm's row statistics and var's. (var's
// second pass in double lanes was bound by the conversions.)
HWY_INLINE double RowMean(D d, const float* x, int64_t n) {
  return SumOver(d, n, 0.0f, x, [](V v, int64_t) { return v; }) / static_cast<double>(n);
}
HWY_INLINE double RowDeviations(D d, const float* x, int64_t n, double mean) {
  const float mean_f = static_cast<float>(mean);
  const V m = hn::Set(d, mean_f);
  // Padding lanes hold the mean: their deviation is 0.
  const double m2 = SumOver(d, n, mean_f, x, [m](V v, int64_t) {
    const V dv = hn::Sub(v, m);
    return hn::Mul(dv, dv);
  });
  const double off = mean - static_cast<double>(mean_f);
  const double corrected = m2 - static_cast<double>(n) * off * off;
  return corrected < 0 ? 0.0 : corrected;  // NaN stays NaN
}
Moments RowMoments(const float* x, int64_t n) {
  const D d;
  const double mean = RowMean(d, x, n);
  return {mean, RowDeviations(d, x, n, mean)};
}

// y[i] = f(x[i], i) over a row (f gets the element index of the vector's
// first lane). With stream, y is written with streaming stores past the
// cache (vector_math.h, stream_output), from its first vector boundary on;
// ForEachRow fences them once after the last row.
template <class F> HWY_INLINE void MapRow(D d, float* y, const float* x, int64_t n, F f, bool stream = false) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  if (stream) {
    const int64_t head = ElementsBeforeAlignment(y, L * static_cast<int64_t>(sizeof(float)), sizeof(float), n);
    if (head > 0) StoreTail(d, f(LoadTail(d, x, head, 0.0f), 0), y, head);
    for (i = head; i + L <= n; i += L) hn::Stream(f(hn::LoadU(d, x + i), i), d, y + i);
  } else {
    for (; i + L <= n; i += L) hn::StoreU(f(hn::LoadU(d, x + i), i), d, y + i);
  }
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

// Streamed rows up to this long keep their exps in a stack buffer (in L1 or
// L2) for the scaling pass, so y is written once, past the cache; longer
// ones keep them in y, as the plain path does.
constexpr int64_t kStreamedSoftmaxRow = 8192;

// --- Many rows per call ---
//
// Each kernel below takes a thread's whole share of rows: one dispatch per
// call rather than per row, short rows' inputs asked for ahead, and one
// store fence after the last streamed row instead of one per row, so rows
// of 64 floats stream too (vector_math.h, stream_rows). Running four short
// rows interleaved, stage by stage, to overlap their dependent chains (sum,
// square root, second pass) helped with the data in cache but lost from
// memory, and was dropped (kernels/cpu/README.md has the figures).
// softmax over rows in registers overlaps its rows another way, a batch
// behind and two rows at a time (BatchBehind, below).

// The rows of one input: row r at p + r * stride (p null: no such input).
struct RowsOf {
  const float* p;
  int64_t stride;
  const float* row(int64_t r) const { return p + r * stride; }
};

// Rows up to 1 KiB are asked for kPrefetchRowsAhead rows ahead, one
// prefetch per cache line: each is a short dependent chain (a sum, then the
// row), and the core stalled on the first load of every row.
// The loads of every row, short or long, also ask for their lines a page
// ahead (SumOver, Extreme, LoadRowVectors): two rows ahead is too close to
// cover the memory's latency, and a short-row kernel without the page-ahead
// hint waits on memory however fast it is in the cache.
constexpr int64_t kPrefetchRowsAhead = 2;
constexpr int64_t kPrefetchedRowMax = 256;
HWY_INLINE void PrefetchRow(RowsOf in, int64_t r, int64_t n) {
  if (in.p) PrefetchLines(in.row(r), n);
}

// row(r) for every r < rows, prefetching a's and b's rows ahead (b.p may be
// null). stream: the rows stream their output; fenced once at the end.
template <class Row> HWY_INLINE void ForEachRow(int64_t rows, int64_t n, RowsOf a, RowsOf b, bool stream, Row row) {
  const bool prefetch = n <= kPrefetchedRowMax;
  for (int64_t r = 0; r < rows; ++r) {
    if (prefetch && r + kPrefetchRowsAhead < rows) {
      PrefetchRow(a, r + kPrefetchRowsAhead, n);
      PrefetchRow(b, r + kPrefetchRowsAhead, n);
    }
    row(r);
  }
  if (stream) hwy::FlushStream();  // the streamed lines reach memory before the threads join
}

// Rows of one to four whole vectors (up to 64 floats with AVX-512) are held
// in registers: loaded once, no exps buffer, no loops. Such rows are bound by
// each row's chain (max, exps, sum, output), and the general path's calls,
// loops and buffer round trip crowded the out-of-order window. Each load
// asks for the line a page ahead, as the general path's loops do
// (ForEachRow's 2 rows ahead are too close to hide the memory's latency).
// f(std::integral_constant<int, vectors>) where n is such a row; false otherwise.
template <class F> HWY_INLINE bool ForWholeVectorRow(D d, int64_t n, F f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  if (n == 0 || n % L != 0 || n > 4 * L) return false;
  switch (n / L) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    default:
      f(std::integral_constant<int, 4>{});
      break;
  }
  return true;
}
template <int kVecs> HWY_INLINE void LoadRowVectors(D d, const float* p, V (&v)[kVecs]) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for (int k = 0; k < kVecs; ++k) {
    PrefetchAhead(p + k * L, L);
    v[k] = hn::LoadU(d, p + k * L);
  }
}
// Whether a row's output at out streams (stream asked, out vector-aligned),
// and vector i of it (count lanes real) stored so.
HWY_INLINE bool StreamsTo(D d, const float* out, bool stream) {
  return stream && reinterpret_cast<uintptr_t>(out) % (hn::Lanes(d) * sizeof(float)) == 0;
}
HWY_INLINE void PutRowVector(D d, V v, float* out, int64_t i, int64_t count, bool streamed) {
  if (count < static_cast<int64_t>(hn::Lanes(d)))
    StoreTail(d, v, out + i, count);
  else if (streamed)
    hn::Stream(v, d, out + i);
  else
    hn::StoreU(v, d, out + i);
}
// Vector k of a row held in registers.
HWY_INLINE void StoreRowVector(D d, V v, float* row, int k, bool stream) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  PutRowVector(d, v, row, k * L, L, StreamsTo(d, row, stream));
}

// Rows held in registers go in batches of one vector's lanes, a batch
// behind: one loop takes rows j .. j + kGroup - 1 of batch b together (take:
// their max and sum of exps into slot [b % 2][j]; near a batch's end one at
// a time) and writes the same rows of batch b - 1 (put), whose values from
// the whole batch are known (finish: one vector op over the batch's slots,
// as log_softmax's log of its sums). The rows then do not wait on each
// other, and the stores spread evenly among the arithmetic. (Row by row,
// each row's chain ran through its sum, and for log_softmax a scalar logf
// call, which spills every vector register, before its stores. Writing a
// whole batch after taking it was slower from memory: the stores then came
// in bursts.)
template <int kGroup, class Take, class Finish, class Put>
HWY_INLINE void BatchBehind(D d, int64_t rows, Take take, Finish finish, Put put) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t previous = 0;
  for (int64_t start = 0, batch = 0; start < rows + L; start += L, ++batch) {
    const int cur = static_cast<int>(batch & 1);
    const int64_t count = std::clamp<int64_t>(rows - start, 0, L);
    for (int64_t j = 0; j < std::max(count, previous); j += kGroup) {
      if (j + kGroup <= count)
        take(start + j, cur, j, std::integral_constant<int, kGroup>{});
      else
        for (int64_t q = j; q < count; ++q) take(start + q, cur, q, std::integral_constant<int, 1>{});
      for (int64_t q = j; q < std::min(j + kGroup, previous); ++q) put(start - L + q, cur ^ 1, q);
    }
    finish(cur, count);
    previous = count;
  }
}
constexpr int64_t kMaxLanes = static_cast<int64_t>(hn::MaxLanes(D()));

// Rows taken two at a time, their steps interleaved in the code: two
// independent chains side by side, where the core's scheduler filled up with
// one row's waiting chain (max, then exps, then the sum). Four at a time
// gained nothing more and needs twice the registers (AVX2 has 16).
constexpr int kTakeGroup = 2;
template <int kVecs>
HWY_INLINE void SoftmaxRowsInRegisters(D d, float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t rows,
                                       bool log, bool stream) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  HWY_ALIGN float maxes[2][kMaxLanes];
  HWY_ALIGN float scales[2][kMaxLanes];  // the sums, then log(sum) or 1 / sum
  HWY_ALIGN float exps[2][kMaxLanes * kVecs * kMaxLanes];
  BatchBehind<kTakeGroup>(
      d, rows,
      [&](int64_t r, int slot, int64_t j, auto n_rows) {
        constexpr int kRows = n_rows();
        V v[kRows][kVecs], mx[kRows], sum[kRows];
        for (int q = 0; q < kRows; ++q) {
          LoadRowVectors(d, x + (r + q) * x_stride, v[q]);
          V top = v[q][0];
          for (int k = 1; k < kVecs; ++k) top = hn::Max(top, v[q][k]);
          // A NaN anywhere makes the sum, and so every output, NaN (as the general path).
          mx[q] = hn::MaxOfLanes(d, top);
          sum[q] = hn::Zero(d);
        }
        for (int k = 0; k < kVecs; ++k) {
          for (int q = 0; q < kRows; ++q) {
            const V e = ExpF(d, hn::Sub(v[q][k], mx[q]));
            if (!log) hn::Store(e, d, exps[slot] + ((j + q) * kVecs + k) * L);
            sum[q] = hn::Add(sum[q], e);
          }
        }
        float* const row_max = maxes[slot] + j;
        float* const row_sum = scales[slot] + j;
        for (int q = 0; q < kRows; ++q) {
          row_max[q] = hn::GetLane(mx[q]);
          row_sum[q] = hn::GetLane(hn::SumOfLanes(d, sum[q]));
        }
      },
      [&](int slot, int64_t count) {
        for (int64_t j = count; j < L; ++j) scales[slot][j] = 1.0f;  // lanes of no row
        const V sums = hn::Load(d, scales[slot]);
        hn::Store(log ? LogF(d, sums) : hn::Div(hn::Set(d, 1.0f), sums), d, scales[slot]);
      },
      [&](int64_t r, int slot, int64_t j) {
        float* yr = y + r * y_stride;
        const V t = hn::Set(d, scales[slot][j]);
        if (log) {
          // (x - max) - log(sum), not x - (max + log(sum)): large logits keep their precision.
          const float* xr = x + r * x_stride;
          const V mx = hn::Set(d, maxes[slot][j]);
          for (int k = 0; k < kVecs; ++k)
            StoreRowVector(d, hn::Sub(hn::Sub(hn::LoadU(d, xr + k * L), mx), t), yr, k, stream);
        } else {
          for (int k = 0; k < kVecs; ++k)
            StoreRowVector(d, hn::Mul(hn::Load(d, exps[slot] + (j * kVecs + k) * L), t), yr, k, stream);
        }
      });
  if (stream) hwy::FlushStream();  // the streamed lines reach memory before the threads join
}

// The backward's formulas (SoftmaxBackwardRows) on such a row.
template <int kVecs>
HWY_INLINE void SoftmaxBackwardRowInRegisters(D d, float* gi, const float* g, const float* y, bool log, bool stream) {
  V gv[kVecs], yv[kVecs];
  LoadRowVectors(d, g, gv);
  LoadRowVectors(d, y, yv);
  V sum = hn::Zero(d);
  for (int k = 0; k < kVecs; ++k) sum = hn::Add(sum, log ? gv[k] : hn::Mul(gv[k], yv[k]));
  const V s = hn::Set(d, static_cast<float>(LaneSum(d, sum)));
  for (int k = 0; k < kVecs; ++k)
    StoreRowVector(d, log ? hn::NegMulAdd(ExpF(d, yv[k]), s, gv[k]) : hn::Mul(yv[k], hn::Sub(gv[k], s)), gi, k, stream);
}

// Vector i of a row: count lanes from p, the rest `fill`.
HWY_INLINE V RowVector(D d, const float* p, int64_t i, int64_t count, float fill) {
  return count == static_cast<int64_t>(hn::Lanes(d)) ? hn::LoadU(d, p + i) : LoadTail(d, p + i, count, fill);
}
// Float sums in two chains, added in double every kBlock elements.
struct BlockSum {
  V s[2];
  double total = 0;
  explicit BlockSum(D d) : s{hn::Zero(d), hn::Zero(d)} {}
  void flush(D d) {
    total += LaneSum(d, hn::Add(s[0], s[1]));
    s[0] = s[1] = hn::Zero(d);
  }
};

// One loop over the columns of up to three rows in flight, each row at its
// own stage: first(i, count, slot) for the row furthest ahead (read from
// memory: first_row, and also_ahead where not null, asked for a page
// ahead), then second and third, each for vector i (count lanes real) into
// chain slot (0 or 1); flush() moves float sums to double every kBlock
// elements and at the end. kAll: all three stages on, known at compile time
// (the steady rows); otherwise a stage runs where its flag is set (a call's
// first and last rows).
template <bool kAll, class First, class Second, class Third, class Flush>
HWY_INLINE void RowStagesLoop(D d, int64_t n, const float* first_row, const float* also_ahead, bool first_on,
                              bool second_on, bool third_on, First first, Second second, Third third, Flush flush) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  auto stages = [&](int64_t i, int64_t count, int slot) {
    if (kAll || first_on) first(i, count, slot);
    if (kAll || second_on) second(i, count, slot);
    if (kAll || third_on) third(i, count, slot);
  };
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    if (kAll || first_on) {
      PrefetchAhead(first_row + i, 2 * L);
      if (also_ahead) PrefetchAhead(also_ahead + i, 2 * L);
    }
    stages(i, L, 0);
    stages(i + L, L, 1);
    if ((i + 2 * L) % kBlock == 0) flush();
  }
  for (; i < n; i += L) stages(i, n - i < L ? n - i : L, 0);
  flush();
}

// softmax over rows longer than the register path's, three rows in flight:
// one loop over the columns takes the max of row r + 2 (from memory, asked
// for a page ahead), the exps of row r + 1 and their sum (its row is in the
// cache: the loop before read it for its max) and writes row r (its sum
// known). Each loop then reads memory, computes and streams its stores out
// together, where a row's passes in turn (max, exps, output) had left the
// memory idle during the exps and the core idle during the max and the
// stores.
// A stage with a null input is off (a call's first and last rows), and a
// row gets the same bits in any stage order: the max is exact and the sum
// adds in the same two chains.
struct SoftmaxStage {
  const float* in = nullptr;  // max: the row; exps: the row; write: log_softmax x, softmax its exps
  float* out = nullptr;  // exps: where they go (softmax; log_softmax keeps none); write: y
  float max = 0;  // exps and write: the row's max
  float scale = 0;  // write: log(sum) (log_softmax) or 1 / sum (softmax)
};
struct SoftmaxStageResults {
  float max;  // NaN where the row has one: the row is then NaN, as the scalar kernel's
  double sum;  // of the exps, in float lanes added in double every kBlock elements
};
// kAll: every stage on (all but a call's first two and last two rows),
// known at compile time: the loop then tests nothing per vector.
template <bool kLog, bool kAll>
HWY_INLINE SoftmaxStageResults SoftmaxThreeRows(D d, int64_t n, bool stream, const SoftmaxStage& max_of,
                                                const SoftmaxStage& exps_of, const SoftmaxStage& write) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float minus_inf = -std::numeric_limits<float>::infinity();
  V m[2] = {hn::Set(d, minus_inf), hn::Set(d, minus_inf)};
  auto nan = hn::Lt(m[0], m[0]);  // all false
  BlockSum sum(d);
  const V shift = hn::Set(d, exps_of.max), a = hn::Set(d, write.max), b = hn::Set(d, write.scale);
  const bool streamed = StreamsTo(d, write.out, stream);
  RowStagesLoop<kAll>(
      d, n, max_of.in, nullptr, max_of.in, exps_of.in, write.in,
      [&](int64_t i, int64_t count, int slot) {
        const V v = RowVector(d, max_of.in, i, count, minus_inf);
        nan = hn::Or(nan, hn::IsNaN(v));
        m[slot] = hn::Max(m[slot], v);
      },
      [&](int64_t i, int64_t count, int slot) {
        // Padding lanes: exp(-inf - max) = 0.
        const V e = ExpF(d, hn::Sub(RowVector(d, exps_of.in, i, count, minus_inf), shift));
        if (!kLog) {
          if (count < L)
            StoreTail(d, e, exps_of.out + i, count);
          else
            hn::StoreU(e, d, exps_of.out + i);
        }
        sum.s[slot] = hn::Add(sum.s[slot], e);
      },
      [&](int64_t i, int64_t count, int) {
        const V v = RowVector(d, write.in, i, count, 0.0f);
        // (x - max) - log(sum), not x - (max + log(sum)): large logits keep their precision.
        PutRowVector(d, kLog ? hn::Sub(hn::Sub(v, a), b) : hn::Mul(v, b), write.out, i, count, streamed);
      },
      [&] { sum.flush(d); });
  const float max = hn::AllFalse(d, nan) ? hn::GetLane(hn::MaxOfLanes(d, hn::Max(m[0], m[1])))
                                         : std::numeric_limits<float>::quiet_NaN();
  return {max, sum.total};
}

void SoftmaxRows(float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t rows, int64_t n, bool log,
                 bool stream) {
  const D d;
  const RowsOf in{x, x_stride};
  if (ForWholeVectorRow(d, n, [&](auto vectors) {
        SoftmaxRowsInRegisters<vectors()>(d, y, y_stride, x, x_stride, rows, log, stream);
      }))
    return;
  // Longer rows: three in flight (SoftmaxThreeRows), r the row written.
  // softmax keeps the exps of two rows in stack buffers when it streams y
  // (written once, past the cache), else in y, scaled in place.
  const bool buffered = !log && stream && n <= kStreamedSoftmaxRow;
  HWY_ALIGN float exps_a[kStreamedSoftmaxRow], exps_b[kStreamedSoftmaxRow];
  const auto exps_of = [&](int64_t r) {
    return log ? nullptr : buffered ? (r % 2 ? exps_b : exps_a) : y + r * y_stride;
  };
  const bool stream_y = stream && (log || buffered);
  float row_max[3] = {0, 0, 0};  // by r % 3
  float row_scale[3] = {0, 0, 0};  // log(sum) or 1 / sum, by r % 3
  for (int64_t r = -2; r < rows; ++r) {
    SoftmaxStage max_of_next{}, exps_of_next{}, write{};
    if (r + 2 < rows) max_of_next = {in.row(r + 2)};
    if (r + 1 >= 0 && r + 1 < rows) exps_of_next = {in.row(r + 1), exps_of(r + 1), row_max[(r + 1) % 3]};
    if (r >= 0) write = {log ? in.row(r) : exps_of(r), y + r * y_stride, row_max[r % 3], row_scale[r % 3]};
    const bool all = max_of_next.in && exps_of_next.in && write.in;
    const SoftmaxStageResults done =
        log ? (all ? SoftmaxThreeRows<true, true>(d, n, stream_y, max_of_next, exps_of_next, write)
                   : SoftmaxThreeRows<true, false>(d, n, stream_y, max_of_next, exps_of_next, write))
            : (all ? SoftmaxThreeRows<false, true>(d, n, stream_y, max_of_next, exps_of_next, write)
                   : SoftmaxThreeRows<false, false>(d, n, stream_y, max_of_next, exps_of_next, write));
    if (r + 2 < rows) row_max[(r + 2) % 3] = done.max;
    // logf of the float sum, not log in double: 1.5 ulp of a log_sum >= 0
    // where the output is float anyway.
    if (exps_of_next.in)
      row_scale[(r + 1) % 3] = log ? std::log(static_cast<float>(done.sum)) : static_cast<float>(1.0 / done.sum);
  }
  if (stream_y) hwy::FlushStream();  // the streamed lines reach memory before the threads join
}

// The backwards below run one row behind: one loop writes row r's gradient
// (kWrite; that row's inputs are in the cache, read by the loop before) and
// takes row r+1's sums (kSumNext; its inputs come from memory, asked for a
// page ahead through next_a and next_b). The reads of one row and the
// writes of the other then overlap, as in add's loop, where the rows' passes
// in turn had left memory idle while a row was written. A call's first row
// gets its sums from the same loop with the writes off, so a row's bits do
// not depend on where a thread's share of rows begins.
//
// sum_next(i, count, slot) folds vector i of the next row (count lanes
// real) into accumulator set slot (0 or 1: two chains); flush() moves the
// float accumulators to double every kBlock elements; grad(i, count) is
// this row's output vector i, streamed where out is aligned.
template <bool kWrite, bool kSumNext, class SumNext, class Flush, class Grad>
HWY_INLINE void OneRowBehind(D d, float* out, int64_t n, bool stream, const float* next_a, const float* next_b,
                             SumNext sum_next, Flush flush, Grad grad) {
  const bool streamed = kWrite && StreamsTo(d, out, stream);
  RowStagesLoop<kWrite && kSumNext>(
      d, n, next_a, next_b, kSumNext, false, kWrite, sum_next, [](int64_t, int64_t, int) {},
      [&](int64_t i, int64_t count, int) { PutRowVector(d, grad(i, count), out, i, count, streamed); },
      [&] {
        if constexpr (kSumNext) flush();
      });
}
// softmax's gradient y (g - dot) with the next row's g . y.
template <bool kWrite, bool kSumNext>
HWY_INLINE double SoftmaxGradRowSummingNext(D d, float* out, const float* g, const float* y, float dot, const float* gn,
                                            const float* yn, int64_t n, bool stream) {
  const V dv = hn::Set(d, dot);
  BlockSum next(d);
  OneRowBehind<kWrite, kSumNext>(
      d, out, n, stream, gn, yn,
      [&](int64_t i, int64_t count, int slot) {
        next.s[slot] = hn::MulAdd(RowVector(d, gn, i, count, 0.0f), RowVector(d, yn, i, count, 0.0f), next.s[slot]);
      },
      [&] { next.flush(d); },
      [&](int64_t i, int64_t count) {
        return hn::Mul(RowVector(d, y, i, count, 0.0f), hn::Sub(RowVector(d, g, i, count, 0.0f), dv));
      });
  return next.total;
}

// log_softmax's gradient g - exps * s for rows up to kStreamedSoftmaxRow,
// exp(y) kept in `exps` from the pass before; the next row's sum of g, and
// exp of its y stored in exps_next.
template <bool kWrite, bool kSumNext>
HWY_INLINE double LogSoftmaxGradRowSummingNext(D d, float* out, const float* g, const float* exps, float s,
                                               const float* gn, const float* yn, float* exps_next, int64_t n,
                                               bool stream) {
  const V sv = hn::Set(d, s);
  BlockSum next(d);
  OneRowBehind<kWrite, kSumNext>(
      d, out, n, stream, gn, yn,
      [&](int64_t i, int64_t count, int slot) {
        next.s[slot] = hn::Add(next.s[slot], RowVector(d, gn, i, count, 0.0f));
        hn::Store(ExpF(d, RowVector(d, yn, i, count, 0.0f)), d, exps_next + i);  // the buffer has room for a vector
      },
      [&] { next.flush(d); },
      [&](int64_t i, int64_t count) {
        return hn::NegMulAdd(hn::Load(d, exps + i), sv, RowVector(d, g, i, count, 0.0f));
      });
  return next.total;
}

// softmax: gi = y * (g - sum(g * y)); log_softmax: gi = g - exp(y) * sum(g).
void SoftmaxBackwardRows(float* gi, int64_t gi_stride, const float* g, int64_t g_stride, const float* y,
                         int64_t y_stride, int64_t rows, int64_t n, bool log, bool stream) {
  if (rows <= 0) return;
  const D d;
  const RowsOf gin{g, g_stride}, yin{y, y_stride};
  if (ForWholeVectorRow(d, n, [&](auto vectors) {
        ForEachRow(rows, n, gin, yin, stream, [&](int64_t r) {
          SoftmaxBackwardRowInRegisters<vectors()>(d, gi + r * gi_stride, gin.row(r), yin.row(r), log, stream);
        });
      }))
    return;
  if (!log) {  // any length: the pipelined loop keeps no buffer
    float dot = static_cast<float>(
        SoftmaxGradRowSummingNext<false, true>(d, nullptr, nullptr, nullptr, 0.0f, gin.row(0), yin.row(0), n, false));
    for (int64_t r = 0; r + 1 < rows; ++r)
      dot = static_cast<float>(SoftmaxGradRowSummingNext<true, true>(d, gi + r * gi_stride, gin.row(r), yin.row(r), dot,
                                                                     gin.row(r + 1), yin.row(r + 1), n, stream));
    SoftmaxGradRowSummingNext<true, false>(d, gi + (rows - 1) * gi_stride, gin.row(rows - 1), yin.row(rows - 1), dot,
                                           nullptr, nullptr, n, stream);
    if (stream) hwy::FlushStream();
    return;
  }
  // log_softmax over rows up to kStreamedSoftmaxRow: exp(y) is computed in
  // the pass that sums g and kept for the writing pass, so the exps overlap
  // reads from memory, and that pass runs one row ahead of the writes.
  if (n <= kStreamedSoftmaxRow) {
    HWY_ALIGN float exps_a[kStreamedSoftmaxRow + hn::MaxLanes(d)], exps_b[kStreamedSoftmaxRow + hn::MaxLanes(d)];
    float* exps = exps_a;
    float* exps_next = exps_b;
    float s = static_cast<float>(LogSoftmaxGradRowSummingNext<false, true>(d, nullptr, nullptr, nullptr, 0.0f,
                                                                           gin.row(0), yin.row(0), exps, n, false));
    for (int64_t r = 0; r + 1 < rows; ++r) {
      s = static_cast<float>(LogSoftmaxGradRowSummingNext<true, true>(
          d, gi + r * gi_stride, gin.row(r), exps, s, gin.row(r + 1), yin.row(r + 1), exps_next, n, stream));
      std::swap(exps, exps_next);
    }
    LogSoftmaxGradRowSummingNext<true, false>(d, gi + (rows - 1) * gi_stride, gin.row(rows - 1), exps, s, nullptr,
                                              nullptr, nullptr, n, stream);
    if (stream) hwy::FlushStream();
    return;
  }
  ForEachRow(rows, n, gin, yin, stream, [&](int64_t r) {
    const float* gr = gin.row(r);
    const float* yr = yin.row(r);
    float* out = gi + r * gi_stride;
    const V s = hn::Set(d, static_cast<float>(SumOver(
                               d, n, 0.0f, gr, [](V v, int64_t) { return v; }, yr)));
    MapRow(
        d, out, gr, n, [&](V gv, int64_t i) { return hn::NegMulAdd(ExpF(d, At(d, yr, i, n, 0.0f)), s, gv); }, stream);
  });
}

// A short row's mean and m2 in one pass: the sums of d = x - x[0] and of d^2
// (both in float lanes, independent), mean = x[0] + sum d / n and m2 =
// sum d^2 - (sum d)^2 / n. Two passes put two horizontal sums and a second
// read of the row on one chain per row, and rows of 64 stalled on it (the
// scheduler fills with the row's waiting operations). The subtraction loses
// about log2(sum d^2 / m2) bits: where x[0] lies far enough from the mean
// that sum d^2 > 16 m2 (or the row holds NaN or inf) the row takes the two
// passes, so the fast rows lose at most 4 bits of float's 24 before the
// double arithmetic. Returns false for those rows.
HWY_INLINE bool ShortRowMoments(D d, const float* x, int64_t n, double& mean, double& m2) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float first = x[0];
  const V shift = hn::Set(d, first);
  V s1 = hn::Zero(d), s2 = hn::Zero(d), t1 = hn::Zero(d), t2 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    PrefetchAhead(x + i, 2 * L);  // a page ahead, as SumOver
    const V d0 = hn::Sub(hn::LoadU(d, x + i), shift), d1 = hn::Sub(hn::LoadU(d, x + i + L), shift);
    s1 = hn::Add(s1, d0), s2 = hn::MulAdd(d0, d0, s2);
    t1 = hn::Add(t1, d1), t2 = hn::MulAdd(d1, d1, t2);
  }
  for (; i < n; i += L) {
    PrefetchAhead(x + i, L);
    const V dv = hn::Sub(At(d, x, i, n, first), shift);  // padding lanes: x[0], a difference of 0
    s1 = hn::Add(s1, dv), s2 = hn::MulAdd(dv, dv, s2);
  }
  const double sum = LaneSum(d, hn::Add(s1, t1)), sum_sq = LaneSum(d, hn::Add(s2, t2));
  const double inv_n = 1.0 / static_cast<double>(n);
  mean = static_cast<double>(first) + sum * inv_n;
  m2 = sum_sq - sum * sum * inv_n;
  return sum_sq <= 16.0 * m2;  // false for NaN
}

// layer_norm over rows longer than kPrefetchedRowMax, three rows in flight
// as softmax's (RowStagesLoop): one loop sums row r + 2 (from memory), sums
// the squared deviations of row r + 1 from its mean (RowDeviations's
// formula: from the float-rounded mean, corrected) and writes row r.
template <bool kAll>
HWY_INLINE void LayerNormThreeRows(D d, float* y, const float* x, int64_t rows, int64_t n, const float* w,
                                   const float* b, double eps, double* mean, double* rstd, int64_t r, bool stream) {
  const bool sum_on = r + 2 < rows, deviations_on = r + 1 >= 0 && r + 1 < rows, write_on = r >= 0;
  const float* sum_row = sum_on ? x + (r + 2) * n : nullptr;
  const float* deviations_row = deviations_on ? x + (r + 1) * n : nullptr;
  const float mean_f = deviations_on ? static_cast<float>(mean[r + 1]) : 0.0f;
  const V mn = hn::Set(d, mean_f);
  const V m = hn::Set(d, write_on ? static_cast<float>(mean[r]) : 0.0f);
  const V rs = hn::Set(d, write_on ? static_cast<float>(rstd[r]) : 0.0f);
  float* out = write_on ? y + r * n : nullptr;
  const float* xr = write_on ? x + r * n : nullptr;
  const bool streamed = write_on && StreamsTo(d, out, stream);
  BlockSum sum(d), deviations(d);
  RowStagesLoop<kAll>(
      d, n, sum_row, nullptr, sum_on, deviations_on, write_on,
      [&](int64_t i, int64_t count, int slot) {
        sum.s[slot] = hn::Add(sum.s[slot], RowVector(d, sum_row, i, count, 0.0f));
      },
      [&](int64_t i, int64_t count, int slot) {
        // Padding lanes hold the mean: their deviation is 0.
        const V dv = hn::Sub(RowVector(d, deviations_row, i, count, mean_f), mn);
        deviations.s[slot] = hn::MulAdd(dv, dv, deviations.s[slot]);
      },
      [&](int64_t i, int64_t count, int) {
        V o = hn::Mul(hn::Sub(RowVector(d, xr, i, count, 0.0f), m), rs);
        if (w) o = hn::Mul(o, RowVector(d, w, i, count, 0.0f));
        if (b) o = hn::Add(o, RowVector(d, b, i, count, 0.0f));
        PutRowVector(d, o, out, i, count, streamed);
      },
      [&] {
        sum.flush(d);
        deviations.flush(d);
      });
  if (sum_on) mean[r + 2] = sum.total / static_cast<double>(n);
  if (deviations_on) {
    const double off = mean[r + 1] - static_cast<double>(mean_f);
    const double m2 = deviations.total - static_cast<double>(n) * off * off;
    rstd[r + 1] = 1.0 / std::sqrt((m2 < 0 ? 0.0 : m2) / static_cast<double>(n) + eps);  // NaN stays NaN
  }
}

void LayerNormRows(float* y, const float* x, int64_t rows, int64_t n, const float* w, const float* b, double eps,
                   double* mean, double* rstd, bool stream) {
  const D d;
  if (n > kPrefetchedRowMax) {
    for (int64_t r = -2; r < rows; ++r) {
      if (r >= 0 && r + 2 < rows)
        LayerNormThreeRows<true>(d, y, x, rows, n, w, b, eps, mean, rstd, r, stream);
      else
        LayerNormThreeRows<false>(d, y, x, rows, n, w, b, eps, mean, rstd, r, stream);
    }
    if (stream) hwy::FlushStream();  // the streamed lines reach memory before the threads join
    return;
  }
  const RowsOf in{x, n};
  ForEachRow(rows, n, in, RowsOf{}, stream, [&](int64_t r) {
    const float* xr = in.row(r);
    double m2;
    if (!ShortRowMoments(d, xr, n, mean[r], m2)) {
      mean[r] = RowMean(d, xr, n);
      m2 = RowDeviations(d, xr, n, mean[r]);
    }
    rstd[r] = 1.0 / std::sqrt(m2 / static_cast<double>(n) + eps);
    const V m = hn::Set(d, static_cast<float>(mean[r])), rs = hn::Set(d, static_cast<float>(rstd[r]));
    MapRow(
        d, y + r * n, xr, n,
        [&](V v, int64_t i) {
          V o = hn::Mul(hn::Sub(v, m), rs);
          if (w) o = hn::Mul(o, At(d, w, i, n, 0.0f));
          if (b) o = hn::Add(o, At(d, b, i, n, 0.0f));
          return o;
        },
        stream);
  });
}

// One row of layer_norm's gradient (LayerNormBackwardRows's formula) with
// the next row's two sums, of g w and of g w xhat (OneRowBehind).
struct LayerNormGradRow {
  const float* g;
  const float* x;
  float mean, rstd;
};
template <bool kWrite, bool kSumNext>
HWY_INLINE void LayerNormGradRowSummingNext(D d, float* out, LayerNormGradRow cur, float mean_gy, float mean_gy_xhat,
                                            LayerNormGradRow next, const float* w, int64_t n, bool stream,
                                            double& sum_gy, double& sum_gy_xhat) {
  const V m = hn::Set(d, cur.mean), rs = hn::Set(d, cur.rstd), mgy = hn::Set(d, mean_gy),
          mgx = hn::Set(d, mean_gy_xhat);
  const V mn = hn::Set(d, next.mean), rsn = hn::Set(d, next.rstd);
  BlockSum gy(d), gy_xhat(d);
  // Padding lanes: g 0 and x the mean (xhat 0), so they add nothing.
  auto gw = [&](const float* g, int64_t i, int64_t count) {
    const V gv = RowVector(d, g, i, count, 0.0f);
    return w ? hn::Mul(gv, RowVector(d, w, i, count, 0.0f)) : gv;
  };
  OneRowBehind<kWrite, kSumNext>(
      d, out, n, stream, next.g, next.x,
      [&](int64_t i, int64_t count, int slot) {
        const V gwv = gw(next.g, i, count);
        const V xhat = hn::Mul(hn::Sub(RowVector(d, next.x, i, count, next.mean), mn), rsn);
        gy.s[slot] = hn::Add(gy.s[slot], gwv);
        gy_xhat.s[slot] = hn::MulAdd(gwv, xhat, gy_xhat.s[slot]);
      },
      [&] {
        gy.flush(d);
        gy_xhat.flush(d);
      },
      [&](int64_t i, int64_t count) {
        const V xhat = hn::Mul(hn::Sub(RowVector(d, cur.x, i, count, cur.mean), m), rs);
        return hn::Mul(rs, hn::Sub(hn::Sub(gw(cur.g, i, count), mgy), hn::Mul(xhat, mgx)));
      });
  sum_gy = gy.total;
  sum_gy_xhat = gy_xhat.total;
}

// gi = rstd * (g w - mean(g w) - xhat * mean(g w xhat)), xhat = (x - mean) * rstd,
// with mean and rstd rounded to float.
void LayerNormBackwardRows(float* gi, const float* g, const float* x, int64_t rows, int64_t n, const float* w,
                           const double* mean, const double* rstd, bool stream) {
  const D d;
  if (rows <= 0) return;
  auto row = [&](int64_t r) {
    return LayerNormGradRow{g + r * n, x + r * n, static_cast<float>(mean[r]), static_cast<float>(rstd[r])};
  };
  const double inv_n = 1.0 / static_cast<double>(n);
  double sum_gy = 0, sum_gy_xhat = 0;
  LayerNormGradRowSummingNext<false, true>(d, nullptr, row(0), 0.0f, 0.0f, row(0), w, n, false, sum_gy, sum_gy_xhat);
  for (int64_t r = 0; r < rows; ++r) {
    const float mean_gy = static_cast<float>(sum_gy * inv_n), mean_gy_xhat = static_cast<float>(sum_gy_xhat * inv_n);
    if (r + 1 < rows)
      LayerNormGradRowSummingNext<true, true>(d, gi + r * n, row(r), mean_gy, mean_gy_xhat, row(r + 1), w, n, stream,
                                              sum_gy, sum_gy_xhat);
    else
      LayerNormGradRowSummingNext<true, false>(d, gi + r * n, row(r), mean_gy, mean_gy_xhat, row(r), w, n, stream,
                                               sum_gy, sum_gy_xhat);
  }
  if (stream) hwy::FlushStream();
}

HWY_INLINE double RmsNormRstd(D d, const float* x, int64_t n, double eps) {
  const double sq = SumOver(d, n, 0.0f, x, [](V v, int64_t) { return hn::Mul(v, v); });
  return 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
}

void RmsNormRows(float* y, const float* x, int64_t rows, int64_t n, const float* w, double eps, float* rstd,
                 bool stream) {
  const D d;
  const RowsOf in{x, n};
  ForEachRow(rows, n, in, RowsOf{}, stream, [&](int64_t r) {
    const float* xr = in.row(r);
    rstd[r] = static_cast<float>(RmsNormRstd(d, xr, n, eps));
    const V rs = hn::Set(d, rstd[r]);
    MapRow(
        d, y + r * n, xr, n,
        [&](V v, int64_t i) {
          const V o = hn::Mul(v, rs);
          return w ? hn::Mul(o, At(d, w, i, n, 0.0f)) : o;
        },
        stream);
  });
}

// rstd recomputed exactly as RmsNormRows computes it, then (gi non-null)
// gi = r * g w - x * (r^3 * mean(g w x)).
void RmsNormBackwardRows(float* gi, const float* g, const float* x, int64_t rows, int64_t n, const float* w, double eps,
                         double* rstd, bool stream) {
  const D d;
  const RowsOf gin{gi ? g : nullptr, n}, xin{x, n};
  auto gw = [&](V gv, int64_t i) { return w ? hn::Mul(gv, At(d, w, i, n, 0.0f)) : gv; };
  ForEachRow(rows, n, xin, gin, stream && gi, [&](int64_t r) {
    const float* xr = xin.row(r);
    const double rr = rstd[r] = RmsNormRstd(d, xr, n, eps);
    if (!gi) return;
    const float* gr = gin.row(r);
    // Padding lanes of g are 0, so the sum ignores them.
    const double dot =
        SumOver(d, n, 0.0f, gr, [&](V gv, int64_t i) { return hn::Mul(gw(gv, i), At(d, xr, i, n, 0.0f)); });
    const V rv = hn::Set(d, static_cast<float>(rr));
    const V c = hn::Set(d, static_cast<float>(rr * rr * rr * dot / static_cast<double>(n)));
    MapRow(
        d, gi + r * n, gr, n,
        [&](V gv, int64_t i) { return hn::Sub(hn::Mul(rv, gw(gv, i)), hn::Mul(At(d, xr, i, n, 0.0f), c)); }, stream);
  });
}

}  // namespace anvil::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace anvil::cpu::vec {

HWY_EXPORT(SelectRow);
HWY_EXPORT(ExpShiftedRow);
HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(SoftmaxBackwardRows);
HWY_EXPORT(LayerNormRows);
HWY_EXPORT(LayerNormBackwardRows);
HWY_EXPORT(RmsNormRows);
HWY_EXPORT(RmsNormBackwardRows);
HWY_EXPORT(Sum);
HWY_EXPORT(Max);
HWY_EXPORT(Min);
HWY_EXPORT(RowMoments);
HWY_EXPORT(AddRowsInto);
HWY_EXPORT(MaxRowsInto);
HWY_EXPORT(MinRowsInto);
HWY_EXPORT(ColumnMoments);

double exp_shifted_row(float* y, const float* x, int64_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftedRow)(y, x, n, shift);
}
void select_row(float* row, const uint8_t* keep, int64_t n, float fill) {
  HWY_DYNAMIC_DISPATCH(SelectRow)(row, keep, n, fill);
}
void softmax_rows(float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t rows, int64_t n, bool log,
                  bool stream) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRows)(y, y_stride, x, x_stride, rows, n, log, stream);
}
void softmax_backward_rows(float* gi, int64_t gi_stride, const float* g, int64_t g_stride, const float* y,
                           int64_t y_stride, int64_t rows, int64_t n, bool log, bool stream) {
  HWY_DYNAMIC_DISPATCH(SoftmaxBackwardRows)(gi, gi_stride, g, g_stride, y, y_stride, rows, n, log, stream);
}
void layer_norm_rows(float* y, const float* x, int64_t rows, int64_t n, const float* w, const float* b, double eps,
                     double* mean, double* rstd, bool stream) {
  HWY_DYNAMIC_DISPATCH(LayerNormRows)(y, x, rows, n, w, b, eps, mean, rstd, stream);
}
void layer_norm_backward_rows(float* gi, const float* g, const float* x, int64_t rows, int64_t n, const float* w,
                              const double* mean, const double* rstd, bool stream) {
  HWY_DYNAMIC_DISPATCH(LayerNormBackwardRows)(gi, g, x, rows, n, w, mean, rstd, stream);
}
void rms_norm_rows(float* y, const float* x, int64_t rows, int64_t n, const float* w, double eps, float* rstd,
                   bool stream) {
  HWY_DYNAMIC_DISPATCH(RmsNormRows)(y, x, rows, n, w, eps, rstd, stream);
}
void rms_norm_backward_rows(float* gi, const float* g, const float* x, int64_t rows, int64_t n, const float* w,
                            double eps, double* rstd, bool stream) {
  HWY_DYNAMIC_DISPATCH(RmsNormBackwardRows)(gi, g, x, rows, n, w, eps, rstd, stream);
}
double sum(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Sum)(x, n); }
float max(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Max)(x, n); }
float min(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Min)(x, n); }
Moments moments(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(RowMoments)(x, n); }
void add_rows_into(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  HWY_DYNAMIC_DISPATCH(AddRowsInto)(acc, x, rows, row_stride, n);
}
void max_rows_into(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  HWY_DYNAMIC_DISPATCH(MaxRowsInto)(acc, x, rows, row_stride, n);
}
void min_rows_into(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n) {
  HWY_DYNAMIC_DISPATCH(MinRowsInto)(acc, x, rows, row_stride, n);
}
void column_moments(double* mean, double* m2, const float* x, int64_t rows, int64_t row_stride, int64_t n,
                    const double* center) {
  HWY_DYNAMIC_DISPATCH(ColumnMoments)(mean, m2, x, rows, row_stride, n, center);
}

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
void softmax_rows(float*, int64_t, const float*, int64_t, int64_t, int64_t, bool, bool) { absent(); }
void softmax_backward_rows(float*, int64_t, const float*, int64_t, const float*, int64_t, int64_t, int64_t, bool,
                           bool) {
  absent();
}
void layer_norm_rows(float*, const float*, int64_t, int64_t, const float*, const float*, double, double*, double*,
                     bool) {
  absent();
}
void layer_norm_backward_rows(float*, const float*, const float*, int64_t, int64_t, const float*, const double*,
                              const double*, bool) {
  absent();
}
void rms_norm_rows(float*, const float*, int64_t, int64_t, const float*, double, float*, bool) { absent(); }
void rms_norm_backward_rows(float*, const float*, const float*, int64_t, int64_t, const float*, double, double*, bool) {
  absent();
}
double sum(const float*, int64_t) { absent(); }
float max(const float*, int64_t) { absent(); }
float min(const float*, int64_t) { absent(); }
Moments moments(const float*, int64_t) { absent(); }
void add_rows_into(double*, const float*, int64_t, int64_t, int64_t) { absent(); }
void max_rows_into(double*, const float*, int64_t, int64_t, int64_t) { absent(); }
void min_rows_into(double*, const float*, int64_t, int64_t, int64_t) { absent(); }
void column_moments(double*, double*, const float*, int64_t, int64_t, int64_t, const double*) { absent(); }
}  // namespace anvil::cpu::vec

#endif  // ANVIL_HAVE_HIGHWAY
