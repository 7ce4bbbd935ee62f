#pragma once
// Iteration over N views of one shape with arbitrary strides (0 included, for
// broadcast inputs). Dims of size 1 are dropped and neighbouring dims that are
// contiguous in every view are merged, so a contiguous tensor of any rank is
// one long run. Kernels then see "runs": a pointer and a byte stride per
// operand and a length, and write a tight loop over each run; map_elements()
// does that for plain elementwise kernels, with unit-stride fast paths the
// compiler can vectorise.
//
// Large loops are split into one contiguous range of elements per OpenMP
// thread. Bodies run inside the parallel region, so they must not throw:
// validate before the loop.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/base/error.h"
#include "core/base/float_to_int.h"
#include "kernels/view.h"

namespace anvil::cpu {

// Below about this many elements of work one thread is faster than waking the
// team. Set high on purpose: every parallel region ends in a barrier, and when
// another process holds a core (a build, a second test), OpenMP threads that
// spin at barriers stall the whole op; small ops gain little from threads anyway.
inline constexpr int64_t kParallelGrain = 1 << 18;
inline constexpr int kMaxLoopDims = 16;

// Threads worth using for `n` items costing `cost` element-operations in all.
inline int threads_for(int64_t n, int64_t cost) {
  if (n < 2 || cost < kParallelGrain || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), n));
}

// Calls f(begin, end) on disjoint ranges covering [0, n): one range per thread
// when the work is large, else f(0, n) here. The split is static, so anything
// computed per range is deterministic for a given thread count.
template <typename F> void parallel_for(int64_t n, int64_t cost, F&& f) {
  if (n <= 0) return;
  const int threads = threads_for(n, cost);
  if (threads <= 1) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = (n + team - 1) / team;
    if (chunk > 64) chunk = (chunk + 15) / 16 * 16;  // threads never share an output cache line
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) f(begin, end);
  }
}

template <size_t N> class StridedLoop {
 public:
  using Ptrs = std::array<char*, N>;
  using Strides = std::array<int64_t, N>;  // in bytes

  // A stretch of consecutive elements along the innermost dim. `first` is the
  // row-major (logical) index of its first element in the loop's shape.
  struct Run {
    Ptrs ptr;
    Strides stride;
    int64_t n;
    int64_t first;
  };

  StridedLoop() = default;

  // Views that share one shape; strides as the views hold them.
  explicit StridedLoop(const std::array<const View*, N>& views) {
    const Shape& shape = views[0]->shape;
    for (const View* v : views)
      ANVIL_CHECK(v->shape == shape && v->strides.size() == shape.size(),
                  "cpu strided loop: operand shapes differ: ", v->shape, " vs ", shape);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      Strides s;
      for (size_t k = 0; k < N; ++k) s[k] = views[k]->strides[d] * static_cast<int64_t>(itemsize(views[k]->dtype));
      add_outer_dim(shape[d], s);
    }
  }

  // Adds a dim outside all present ones (build from the innermost outwards).
  void add_outer_dim(int64_t size, const Strides& byte_strides) {
    if (size == 1) return;
    numel_ *= size;
    if (size == 0) return;
    if (ndim_ > 0) {
      const int last = ndim_ - 1;
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k) mergeable &= byte_strides[k] == strides_[last][k] * sizes_[last];
      if (mergeable) {
        sizes_[last] *= size;
        return;
      }
    }
    ANVIL_CHECK(ndim_ < kMaxLoopDims, "cpu strided loop: more than ", kMaxLoopDims, " non-mergeable dims");
    sizes_[ndim_] = size;
    strides_[ndim_] = byte_strides;
    ++ndim_;
  }

  int64_t numel() const { return numel_; }
  int ndim() const { return ndim_; }
  int64_t size(int d) const { return sizes_[d]; }  // d = 0 is the innermost dim
  const Strides& strides(int d) const { return strides_[d]; }

  // Byte offsets of the element with row-major index `linear`.
  Strides offsets_at(int64_t linear) const {
    Strides off{};
    for (int d = 0; d < ndim_; ++d) {
      const int64_t i = linear % sizes_[d];
      linear /= sizes_[d];
      for (size_t k = 0; k < N; ++k) off[k] += i * strides_[d][k];
    }
    return off;
  }

  // Calls body(const Run&) for the elements with row-major index in [begin, end), in order.
  template <typename Body> void run(const Ptrs& base, int64_t begin, int64_t end, Body&& body) const {
    if (begin >= end) return;
    if (ndim_ == 0) {  // a single element
      body(Run{base, Strides{}, 1, 0});
      return;
    }
    std::array<int64_t, kMaxLoopDims> idx{};
    Ptrs p = base;
    int64_t rest = begin;
    for (int d = 0; d < ndim_; ++d) {
      idx[d] = rest % sizes_[d];
      rest /= sizes_[d];
      for (size_t k = 0; k < N; ++k) p[k] += idx[d] * strides_[d][k];
    }
    for (int64_t pos = begin;;) {
      const int64_t n = std::min(sizes_[0] - idx[0], end - pos);
      body(Run{p, strides_[0], n, pos});
      pos += n;
      if (pos >= end) return;
      // The run reached the end of its row: rewind dim 0 and carry outwards.
      for (size_t k = 0; k < N; ++k) p[k] -= idx[0] * strides_[0][k];
      idx[0] = 0;
      for (int d = 1; d < ndim_; ++d) {
        for (size_t k = 0; k < N; ++k) p[k] += strides_[d][k];
        if (++idx[d] < sizes_[d]) break;
        for (size_t k = 0; k < N; ++k) p[k] -= strides_[d][k] * sizes_[d];
        idx[d] = 0;
      }
    }
  }

  // The whole loop, split over threads when numel * cost_per_element is large.
  template <typename Body> void run_parallel(const Ptrs& base, Body&& body, int64_t cost_per_element = 1) const {
    parallel_for(numel_, numel_ * cost_per_element, [&](int64_t begin, int64_t end) { run(base, begin, end, body); });
  }

 private:
  int ndim_ = 0;
  int64_t numel_ = 1;
  std::array<int64_t, kMaxLoopDims> sizes_{};
  std::array<Strides, kMaxLoopDims> strides_{};
};

// Value conversion between the C++ types of the dtypes: 16-bit floats go
// through float, anything to bool is "!= 0", and floating to integer follows
// core/base/float_to_int.h (saturate to int64, then wrap: NaN -> 0,
// -1.0 -> uint8 255), exactly as the CUDA kernels do.
template <typename To, typename From> inline To cast_value(From v) {
  constexpr bool from16 = std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>;
  constexpr bool to16 = std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>;
  if constexpr (std::is_same_v<To, From>)
    return v;
  else if constexpr (from16)
    return cast_value<To>(static_cast<float>(v));
  else if constexpr (to16)
    return To(static_cast<float>(v));
  else if constexpr (std::is_same_v<To, bool>)
    return v != From(0);
  else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>)
    return float_to_int<To>(v);
  else
    return static_cast<To>(v);
}

namespace loop_detail {

template <typename T> T& at(char* p, int64_t i, int64_t byte_stride) {
  return *reinterpret_cast<T*>(p + i * byte_stride);
}

template <typename Out, typename... In, typename F, size_t... I>
void map_run(const typename StridedLoop<1 + sizeof...(In)>::Run& r, const F& f, std::index_sequence<I...>) {
  constexpr std::array<int64_t, 1 + sizeof...(In)> unit = {sizeof(Out), sizeof(In)...};
  const int64_t n = r.n;
  Out* out = reinterpret_cast<Out*>(r.ptr[0]);
  if (r.stride == unit) {  // all contiguous: the loop the compiler vectorises
    for (int64_t i = 0; i < n; ++i) out[i] = f(reinterpret_cast<const In*>(r.ptr[I + 1])[i]...);
    return;
  }
  if constexpr (sizeof...(In) == 2) {  // one input broadcast along the run (x * scalar, bias)
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    const A* a = reinterpret_cast<const A*>(r.ptr[1]);
    const B* b = reinterpret_cast<const B*>(r.ptr[2]);
    if (r.stride[0] == unit[0] && r.stride[1] == unit[1] && r.stride[2] == 0) {
      const B bv = *b;
      for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
      return;
    }
    if (r.stride[0] == unit[0] && r.stride[1] == 0 && r.stride[2] == unit[2]) {
      const A av = *a;
      for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    at<Out>(r.ptr[0], i, r.stride[0]) = f(at<const In>(r.ptr[I + 1], i, r.stride[I + 1])...);
}

}  // namespace loop_detail

// out[i] = f(in0[i], in1[i], ...) over views of one shape, with Out and In the
// C++ types of their dtypes (the caller has checked them). f must not throw.
template <typename Out, typename... In, typename F>
void map_elements(const View& out, const std::array<const View*, sizeof...(In)>& ins, F f) {
  constexpr size_t N = 1 + sizeof...(In);
  std::array<const View*, N> views{&out};
  typename StridedLoop<N>::Ptrs base{static_cast<char*>(out.data)};
  for (size_t k = 0; k < sizeof...(In); ++k) {
    views[k + 1] = ins[k];
    base[k + 1] = static_cast<char*>(ins[k]->data);
  }
  StridedLoop<N> loop(views);
  loop.run_parallel(base, [&](const typename StridedLoop<N>::Run& r) {
    loop_detail::map_run<Out, In...>(r, f, std::index_sequence_for<In...>{});
  });
}

}  // namespace anvil::cpu
