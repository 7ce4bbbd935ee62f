// Reductions. Each ReduceOp is an accumulator from the reduction table
// (kernels/ops/reduce_ops.h):
//   identity(), lift(x, index) -> Acc, combine(a, b), finish(acc, n)
// and two drivers walk the input, chosen by which input dim moves fastest:
//  - rows: a reduced dim is fastest (sum over the last dim, a full sum). Each
//    output folds its own runs; additive runs are an OpenMP simd sum.
//  - columns: a kept dim is fastest (column sums, bias gradients). A block of
//    neighbouring outputs accumulates one input row after another, which is
//    again a unit-stride loop over memory.
// Floating inputs accumulate in double, integers and bool in int64; except
// contiguous float32 runs (and columns) of sum, mean, max, min and var, which take the
// vector kernels (vector_math.h: float lanes in blocks, the blocks added in
// double; the error stays within a few units of roundoff of sum |x|).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/shapes/reduce_plan.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/vector_math.h"

namespace anvil::cpu {
namespace {

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T> using acc_t = std::conditional_t<is_float_v<T>, double, int64_t>;

template <typename T> acc_t<T> widen(T x) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return static_cast<float>(x);
  else
    return static_cast<acc_t<T>>(x);
}

namespace red = ops::reduce;  // the reductions' math (kernels/ops/reduce_ops.h)
using red::SumMode;

// A shared accumulator fed with storage values: lift widens first.
template <typename T, typename R> struct OnStorage : R {
  auto lift(T x, int64_t index) const { return R::lift(widen(x), index); }
};

template <typename T, SumMode M> struct Additive : OnStorage<T, red::Sum<acc_t<T>, M>> {
  static constexpr bool kAdditive = true;  // folded by an OpenMP simd sum
  double vector_fold(const float* x, int64_t n) const requires(M == SumMode::Sum || M == SumMode::Mean) {
    return vec::sum(x, n);
  }
  void vector_fold_rows_into(double* acc, const float* rows, int64_t n_rows, int64_t row_stride, int64_t n) const
      requires(M == SumMode::Sum || M == SumMode::Mean) {
    vec::add_rows_into(acc, rows, n_rows, row_stride, n);
  }
};

template <typename T> Additive<T, SumMode::PowRoot> pow_root(double p) {
  Additive<T, SumMode::PowRoot> op;
  op.p = p;
  return op;
}

template <typename T> struct Prod : OnStorage<T, red::Product<acc_t<T>>> { static constexpr bool kAdditive = false; };

template <typename T, bool kMax, bool kAbs> struct Extreme : OnStorage<T, red::Extreme<acc_t<T>, kMax>> {
  using Acc = acc_t<T>;
  using Limits = std::numeric_limits<Acc>;
  static constexpr bool kAdditive = false;
  Extreme() {
    this->lowest = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    this->highest = Limits::has_infinity ? Limits::infinity() : Limits::max();
    this->abs = kAbs;
  }
  Acc vector_fold(const float* p, int64_t n) const requires(!kAbs) { return kMax ? vec::max(p, n) : vec::min(p, n); }
  void vector_fold_rows_into(double* acc, const float* rows, int64_t n_rows, int64_t row_stride, int64_t n) const
      requires(!kAbs) {
    kMax ? vec::max_rows_into(acc, rows, n_rows, row_stride, n) : vec::min_rows_into(acc, rows, n_rows, row_stride, n);
  }
  // Unit-stride runs use eight independent accumulators (NaNs counted on the
  // side): the compiler turns that into vector max/min without a dependency chain.
  Acc fold(const T* p, int64_t n, int64_t stride) const {
    if (stride != 1 || kAbs) {
      Acc m = this->identity();
      for (int64_t i = 0; i < n; ++i) m = this->combine(m, this->lift(p[i * stride], 0));
      return m;
    }
    constexpr int kLanes = 8;
    Acc lanes[kLanes];
    for (Acc& m : lanes) m = this->identity();
    bool nan = false;
    auto pick = [](Acc m, Acc v) { return (kMax ? v > m : v < m) ? v : m; };
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int k = 0; k < kLanes; ++k) {
        const Acc v = widen(p[i + k]);
        nan |= ops::math::isnan(v);
        lanes[k] = pick(lanes[k], v);
      }
    }
    for (; i < n; ++i) {
      const Acc v = widen(p[i]);
      nan |= ops::math::isnan(v);
      lanes[0] = pick(lanes[0], v);
    }
    Acc m = lanes[0];
    for (int k = 1; k < kLanes; ++k) m = pick(m, lanes[k]);
    return nan ? std::numeric_limits<Acc>::quiet_NaN() : m;
  }
};

// Outputs a column reduction accumulates together. Wide enough that a
// first-dim reduction of rows up to 1024 long is one block whose rows the
// threads split (each streams whole contiguous rows), small enough that the
// accumulators (8 KiB of doubles, 24 KiB of variance moments) stay in L1.
constexpr int64_t kColumnBlock = 1024;

template <typename T> struct Variance : OnStorage<T, red::Variance<double>> {
  using Acc = red::Moments<double>;
  static constexpr bool kAdditive = false;
  explicit Variance(int64_t dof_correction) { this->correction = dof_correction; }
  // A long run in chunks of kMomentsChunk floats: each chunk's second pass
  // (the squared deviations) reads it from L1, and the chunks merge with
  // Chan's formula, so the run is read from memory once instead of twice.
  static constexpr int64_t kMomentsChunk = 4096;
  Acc vector_fold(const float* p, int64_t n) const {
    Acc acc = Acc::empty();  // merging into empty gives the first chunk's moments as they are
    for (int64_t i = 0; i < n; i += kMomentsChunk) {
      const int64_t k = std::min(kMomentsChunk, n - i);
      const vec::Moments m = vec::moments(p + i, k);
      acc = this->combine(acc, Acc{m.mean, m.m2, k});
    }
    return acc;
  }
  // Columns (var over the first dim): the moments of each 256 rows, merged
  // into acc, instead of a merge per element. Each run after the first is
  // summed as differences from the mean so far, in one pass. Longer runs
  // merge less often; shorter ones had the merges show in the time.
  // reduce_columns hands over at most kColumnBlock columns.
  void vector_fold_rows_into(Acc* acc, const float* rows, int64_t n_rows, int64_t row_stride, int64_t n) const {
    constexpr int64_t kRowsPerRun = 256;
    double mean[kColumnBlock], m2[kColumnBlock], center[kColumnBlock];
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRowsPerRun) {
      const int64_t k = std::min(kRowsPerRun, n_rows - r0);
      const bool first = acc[0].n == 0;  // every column of acc holds the same rows
      if (!first)
        for (int64_t j = 0; j < n; ++j) center[j] = acc[j].mean;
      vec::column_moments(mean, m2, rows + r0 * row_stride, k, row_stride, n, first ? nullptr : center);
      for (int64_t j = 0; j < n; ++j) acc[j] = this->combine(acc[j], Acc{mean[j], m2[j], k});
    }
  }
  // A run in two passes: exact mean first, then squared deviations from it.
  Acc fold(const T* p, int64_t n, int64_t stride) const {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += widen(p[i * stride]);
    const double mean = sum / static_cast<double>(n);
    double m2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = widen(p[i * stride]) - mean;
      m2 += d * d;
    }
    return {mean, m2, n};
  }
};

template <typename T, bool kMax> struct Arg : OnStorage<T, red::ArgExtreme<acc_t<T>, kMax>> {
  static constexpr bool kAdditive = false;
};

// The type a run is summed in: integers in their unsigned type, so that the
// sum wraps (as the table's combine does) instead of overflowing.
template <typename A> struct WrappingSum { using type = A; };
template <typename A>
requires std::is_integral_v<A>
struct WrappingSum<A> {
  using type = std::make_unsigned_t<A>;
};

template <typename T, typename Op>
typename Op::Acc fold_run(const Op& op, const T* p, int64_t n, int64_t stride, int64_t first) {
  using Acc = typename Op::Acc;
  if constexpr (std::is_same_v<T, float> && requires { op.vector_fold(p, n); }) {
    if (stride == 1 && vec::enabled()) return op.vector_fold(p, n);
  }
  if constexpr (Op::kAdditive) {
    using Sum = typename WrappingSum<Acc>::type;
    Sum s = 0;
    if (stride == 1) {
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i) s += static_cast<Sum>(op.lift(p[i], 0));
    } else {
      for (int64_t i = 0; i < n; ++i) s += static_cast<Sum>(op.lift(p[i * stride], 0));
    }
    return static_cast<Acc>(s);
  } else if constexpr (requires { op.fold(p, n, stride); }) {
    return op.fold(p, n, stride);
  } else {
    Acc acc = op.identity();
    for (int64_t i = 0; i < n; ++i) acc = op.combine(acc, op.lift(p[i * stride], first + i));
    return acc;
  }
}

// Splits [0, n) into one range per thread and calls f(t, begin, end); range t
// comes before range t + 1, so partial results can be combined in order.
template <typename F> void split_over_threads(int64_t n, int threads, F&& f) {
#pragma omp parallel num_threads(threads)
  {
    const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = (n + team - 1) / team;
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) f(t, begin, end);
  }
}

// ---- the plan: kept and reduced dims, each coalesced, fastest first ----
// Both backends' plan (kernels/shapes/reduce_plan.h) plus byte strides for the loops.
using Dim = shapes::ReduceDim;

struct ReducePlan : shapes::ReducePlan {
  int64_t in_item = 1, out_item = 1;  // itemsizes, for byte strides

  ReducePlan(const View& out, const View& in)
      : shapes::ReducePlan(out, in),
        in_item(static_cast<int64_t>(itemsize(in.dtype))),
        out_item(static_cast<int64_t>(itemsize(out.dtype))) {}

  StridedLoop<2> kept_loop(size_t first_dim) const {  // operands (in, out)
    StridedLoop<2> loop;
    for (size_t i = first_dim; i < kept.size(); ++i)
      loop.add_outer_dim(kept[i].size, {kept[i].in_stride * in_item, kept[i].out_stride * out_item});
    return loop;
  }
  StridedLoop<1> reduced_loop() const {
    StridedLoop<1> loop;
    for (const Dim& d : reduced) loop.add_outer_dim(d.size, {d.in_stride * in_item});
    return loop;
  }
};

template <typename R> using StoreFn = void (*)(char*, R);

// Writes a double or int64 result into an output element of any dtype.
template <typename R> StoreFn<R> store_for(DType dtype) {
  return visit_dtype(dtype, [](auto tag) -> StoreFn<R> {
    using O = decltype(tag);
    return [](char* p, R v) { *reinterpret_cast<O*>(p) = cast_value<O>(v); };
  });
}

template <typename T, typename Op, typename R>
void reduce_rows(const Op& op, const ReducePlan& plan, const View& out, const View& in, StoreFn<R> store) {
  using Acc = typename Op::Acc;
  const StridedLoop<2> kept = plan.kept_loop(0);
  const StridedLoop<1> red = plan.reduced_loop();
  const int64_t n_out = plan.n_out, n_red = plan.n_red;
  auto fold_range = [&](char* base, int64_t begin, int64_t end) {
    Acc acc = op.identity();
    red.run({base}, begin, end, [&](const StridedLoop<1>::Run& r) {
      acc = op.combine(acc, fold_run(op, reinterpret_cast<const T*>(r.ptr[0]), r.n,
                                     r.stride[0] / static_cast<int64_t>(sizeof(T)), r.first));
    });
    return acc;
  };
  char* in_base = static_cast<char*>(in.data);
  char* out_base = static_cast<char*>(out.data);
  const int threads = threads_for(n_red, n_out * n_red);
  if (n_out >= threads) {  // enough outputs to keep every thread busy
    kept.run_parallel(
        {in_base, out_base},
        [&](const StridedLoop<2>::Run& r) {
          for (int64_t i = 0; i < r.n; ++i)
            store(r.ptr[1] + i * r.stride[1], op.finish(fold_range(r.ptr[0] + i * r.stride[0], 0, n_red), n_red));
        },
        n_red);
    return;
  }
  // Few outputs with long reductions (a full sum): split each reduction over the threads.
  std::vector<Acc> partial(static_cast<size_t>(threads));
  for (int64_t o = 0; o < n_out; ++o) {
    const auto off = kept.offsets_at(o);
    std::fill(partial.begin(), partial.end(), op.identity());
    split_over_threads(n_red, threads, [&](int64_t t, int64_t begin, int64_t end) {
      partial[t] = fold_range(in_base + off[0], begin, end);
    });
    Acc acc = op.identity();
    for (const Acc& p : partial) acc = op.combine(acc, p);
    store(out_base + off[1], op.finish(acc, n_red));
  }
}

template <typename T, typename Op, typename R>
void reduce_columns(const Op& op, const ReducePlan& plan, const View& out, const View& in, StoreFn<R> store) {
  using Acc = typename Op::Acc;
  const Dim col = plan.kept[0];
  const StridedLoop<2> rest = plan.kept_loop(1);
  const StridedLoop<1> red = plan.reduced_loop();
  const int64_t n_red = plan.n_red, blocks = (col.size + kColumnBlock - 1) / kColumnBlock,
                items = rest.numel() * blocks;
  char* in_base = static_cast<char*>(in.data);
  char* out_base = static_cast<char*>(out.data);

  struct Item {
    char* in;
    char* out;
    int64_t len;
  };
  auto item_at = [&](int64_t item) {
    const auto off = rest.offsets_at(item / blocks);
    const int64_t j0 = (item % blocks) * kColumnBlock;
    return Item{in_base + off[0] + j0 * col.in_stride * plan.in_item,
                out_base + off[1] + j0 * col.out_stride * plan.out_item, std::min(kColumnBlock, col.size - j0)};
  };
  // Contiguous float32 columns of sum, mean, max, min and var fold each run
  // of rows with the vector kernels (float lanes, flushed to the double
  // accumulators; var's moments merged every 64 rows).
  constexpr bool kHasVectorRows = std::is_same_v<T, float> && requires(const Op& o, Acc* a, const float* p, int64_t k) {
    o.vector_fold_rows_into(a, p, k, k, k);
  };
  bool vector_rows = false;
  if constexpr (kHasVectorRows) vector_rows = col.in_stride == 1 && vec::enabled();
  // acc[j] folds the reduced elements [begin, end) of output column j of the item.
  auto accumulate = [&](const Item& it, int64_t begin, int64_t end, Acc* acc) {
    red.run({it.in}, begin, end, [&](const StridedLoop<1>::Run& r) {
      if constexpr (kHasVectorRows) {
        if (vector_rows) {
          op.vector_fold_rows_into(acc, reinterpret_cast<const float*>(r.ptr[0]), r.n,
                                   r.stride[0] / static_cast<int64_t>(sizeof(float)), it.len);
          return;
        }
      }
      for (int64_t e = 0; e < r.n; ++e) {
        const T* row = reinterpret_cast<const T*>(r.ptr[0] + e * r.stride[0]);
        const int64_t index = r.first + e;
        if (col.in_stride == 1) {
          for (int64_t j = 0; j < it.len; ++j) acc[j] = op.combine(acc[j], op.lift(row[j], index));
        } else {
          for (int64_t j = 0; j < it.len; ++j) acc[j] = op.combine(acc[j], op.lift(row[j * col.in_stride], index));
        }
      }
    });
  };
  auto emit = [&](const Item& it, const Acc* acc) {
    for (int64_t j = 0; j < it.len; ++j) store(it.out + j * col.out_stride * plan.out_item, op.finish(acc[j], n_red));
  };

  const int threads = threads_for(n_red, plan.n_out * n_red);
  if (items >= threads) {
    parallel_for(items, plan.n_out * n_red, [&](int64_t begin, int64_t end) {
      std::vector<Acc> acc(kColumnBlock);
      for (int64_t item = begin; item < end; ++item) {
        const Item it = item_at(item);
        std::fill(acc.begin(), acc.begin() + it.len, op.identity());
        accumulate(it, 0, n_red, acc.data());
        emit(it, acc.data());
      }
    });
    return;
  }
  // Few column blocks with long reductions: each thread folds a range of rows.
  std::vector<std::vector<Acc>> partial(static_cast<size_t>(threads), std::vector<Acc>(kColumnBlock));
  for (int64_t item = 0; item < items; ++item) {
    const Item it = item_at(item);
    for (auto& p : partial) std::fill(p.begin(), p.end(), op.identity());
    split_over_threads(n_red, threads,
                       [&](int64_t t, int64_t begin, int64_t end) { accumulate(it, begin, end, partial[t].data()); });
    for (size_t t = 1; t < partial.size(); ++t)
      for (int64_t j = 0; j < it.len; ++j) partial[0][j] = op.combine(partial[0][j], partial[t][j]);
    emit(it, partial[0].data());
  }
}

template <typename T, typename Op>
void run_reduce(const Op& op, const ReducePlan& plan, const View& out, const View& in) {
  using R = decltype(op.finish(op.identity(), 0));
  const StoreFn<R> store = store_for<R>(out.dtype);
  if (plan.by_columns())
    reduce_columns<T>(op, plan, out, in, store);
  else
    reduce_rows<T>(op, plan, out, in, store);
}

using shapes::op_name;

template <typename T> void run_norm(double p, const ReducePlan& plan, const View& out, const View& in) {
  if (p == 2) return run_reduce<T>(Additive<T, SumMode::SquareSqrt>{}, plan, out, in);
  if (p == 1) return run_reduce<T>(Additive<T, SumMode::AbsSum>{}, plan, out, in);
  if (p == 0) return run_reduce<T>(Additive<T, SumMode::NonZero>{}, plan, out, in);
  if (std::isinf(p) && p > 0) return run_reduce<T>(Extreme<T, true, true>{}, plan, out, in);
  if (std::isinf(p)) return run_reduce<T>(Extreme<T, false, true>{}, plan, out, in);
  run_reduce<T>(pow_root<T>(p), plan, out, in);
}

template <typename T>
void reduce_dtype(ReduceOp op, const ReducePlan& plan, const View& out, const View& in, const ReduceParams& p) {
  switch (op) {
    case ReduceOp::Sum:
      return run_reduce<T>(Additive<T, SumMode::Sum>{}, plan, out, in);
    case ReduceOp::Prod:
      return run_reduce<T>(Prod<T>{}, plan, out, in);
    case ReduceOp::Max:
      return run_reduce<T>(Extreme<T, true, false>{}, plan, out, in);
    case ReduceOp::Min:
      return run_reduce<T>(Extreme<T, false, false>{}, plan, out, in);
    case ReduceOp::ArgMax:
      return run_reduce<T>(Arg<T, true>{}, plan, out, in);
    case ReduceOp::ArgMin:
      return run_reduce<T>(Arg<T, false>{}, plan, out, in);
    default:
      break;
  }
  if constexpr (!is_float_v<T>) {
    fail(op_name(op), ": not supported for dtype ", dtype_of<T>::value, " (floating dtypes only)");
  } else {
    switch (op) {
      case ReduceOp::Mean:
        return run_reduce<T>(Additive<T, SumMode::Mean>{}, plan, out, in);
      case ReduceOp::Var:
        return run_reduce<T>(Variance<T>(p.correction), plan, out, in);
      case ReduceOp::Norm:
        return run_norm<T>(p.p, plan, out, in);
      default:
        fail("reduce: unknown op ", static_cast<int>(op));
    }
  }
}

}  // namespace

void reduce(ReduceOp op, const View& out, const View& in, const ReduceParams& p) {
  shapes::check_reduce(op, out, in);
  const ReducePlan plan(out, in);
  if (plan.n_out == 0) return;
  shapes::check_reduce_not_empty(op, plan, in.shape);
  visit_dtype(in.dtype, [&](auto tag) { reduce_dtype<decltype(tag)>(op, plan, out, in, p); });
}

ANVIL_REGISTER_KERNEL(kernel::Reduce, CPU, reduce);

}  // namespace anvil::cpu
