#pragma once
// Dense access to a View for the CPU kernels that want a plain row-major
// pointer in one compute type (GEMM-based and reduction-style kernels).
// DenseIn borrows the view's memory when it already is dense in that type and
// otherwise gathers a converted copy; DenseOut does the same for outputs and
// scatters the result back on commit(). This is also how float16/bfloat16 get
// computed in float: the conversion happens in the gather and the scatter
// (vectorised on contiguous rows, vector_convert.h). Their copies are
// Scratch from the CPU backend's caching allocator: uninitialised (the gather
// writes every element) and handed back warm on the next call, where a
// std::vector would zero them first and fault in fresh pages (a MiniLM
// encode's attention gathered q, k and v this way: memset and page faults).
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "kernels/runtime.h"
#include "kernels/cpu/blas_threads.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/vector_convert.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/view.h"

namespace anvil::cpu {

template <typename To, typename From> inline To convert_value(From v) {
  constexpr bool from16 = std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>;
  constexpr bool to16 = std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>;
  if constexpr (std::is_same_v<To, From>)
    return v;
  else if constexpr (from16)
    return convert_value<To>(static_cast<float>(v));
  else if constexpr (to16)
    return To(static_cast<float>(v));
  else
    return static_cast<To>(v);
}

// Calls f(T{}) with T the compute type of a floating dtype: double for
// float64, float for float32 and the 16-bit types. Other dtypes are an error
// naming the op.
template <typename F> void dispatch_floating(const char* op, DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float64:
      f(double{});
      return;
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      f(float{});
      return;
    default:
      fail(op, ": dtype ", dtype_name(dtype), " is not supported on CPU (floating dtypes only)");
  }
}

namespace dense_detail {

// Element offset of row r (all dims but the last) of v, rows in row-major order.
inline int64_t row_offset(const View& v, int64_t r) {
  int64_t off = 0;
  for (int64_t d = v.dim() - 2; d >= 0; --d) {
    off += (r % v.shape[d]) * v.strides[d];
    r /= v.shape[d];
  }
  return off;
}

// Below this many elements a copy is not worth waking the OpenMP team.
inline constexpr int64_t kParallelCopyElems = 1 << 15;

// Calls f(view_offset, dense_offset, inner_len, inner_stride) for each row.
template <typename F> void for_each_row(const View& v, F&& f) {
  const int64_t n = v.numel();
  if (n == 0) return;
  if (v.dim() == 0) {
    f(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{1});
    return;
  }
  const int64_t inner = v.shape.back(), stride = v.strides.back();
  const int64_t rows = n / inner;
#pragma omp parallel for schedule(static) if (n > kParallelCopyElems && use_openmp_beside_blas())
  for (int64_t r = 0; r < rows; ++r) f(row_offset(v, r), r * inner, inner, stride);
}

}  // namespace dense_detail

// dst[i] = v[i] (row-major order), converted to To.
template <typename To> void gather_dense(To* dst, const View& v) {
  visit_dtype(v.dtype, [&](auto tag) {
    using From = decltype(tag);
    const From* src = v.ptr<From>();
    if constexpr (std::is_same_v<To, From>) {
      if (v.is_contiguous()) {
        if (v.numel() > 0) std::memcpy(dst, src, sizeof(To) * v.numel());
        return;
      }
    }
    dense_detail::for_each_row(v, [&](int64_t off, int64_t doff, int64_t len, int64_t stride) {
      const From* s = src + off;
      To* d = dst + doff;
      if constexpr (vec::converts<To, From>) {
        if (stride == 1 && vec::enabled()) return vec::convert(d, s, len);
      }
      for (int64_t j = 0; j < len; ++j) d[j] = convert_value<To>(s[j * stride]);
    });
  });
}

// v[i] = src[i] (row-major order), converted to v's dtype.
template <typename From> void scatter_dense(const View& v, const From* src) {
  visit_dtype(v.dtype, [&](auto tag) {
    using To = decltype(tag);
    To* dst = v.ptr<To>();
    if constexpr (std::is_same_v<To, From>) {
      if (v.is_contiguous()) {
        if (v.numel() > 0) std::memcpy(dst, src, sizeof(To) * v.numel());
        return;
      }
    }
    dense_detail::for_each_row(v, [&](int64_t off, int64_t doff, int64_t len, int64_t stride) {
      To* d = dst + off;
      const From* s = src + doff;
      if constexpr (vec::converts<To, From>) {
        if (stride == 1 && vec::enabled()) return vec::convert(d, s, len);
      }
      for (int64_t j = 0; j < len; ++j) d[j * stride] = convert_value<To>(s[j]);
    });
  });
}

template <typename T> std::vector<T> dense_copy(const View& v) {
  std::vector<T> out(static_cast<size_t>(v.numel()));
  gather_dense(out.data(), v);
  return out;
}

// Host scratch for the dense copies below.
inline Allocator& dense_copy_memory() { return runtime_for(DeviceType::CPU).allocator(0); }

// Read-only dense data of `v` as T.
template <typename T> class DenseIn {
 public:
  explicit DenseIn(const View& v) {
    if (v.dtype == dtype_of<T>::value && v.is_contiguous()) {
      ptr_ = v.ptr<T>();
    } else {
      copy_.emplace(dense_copy_memory(), v.numel());
      gather_dense(copy_->get(), v);
      ptr_ = copy_->get();
    }
  }
  const T* get() const { return ptr_; }
  const T& operator[](int64_t i) const { return ptr_[i]; }

 private:
  std::optional<Scratch<T>> copy_;
  const T* ptr_ = nullptr;
};

// Whether a DenseOut starts from the output's current values (for kernels
// that accumulate into it) or from unspecified ones.
enum class OutStart : uint8_t { Unspecified, CurrentValues };

// Writable dense data for output `v` as T. Call commit() once the kernel has
// written it: that copies back when the view could not be written in place.
template <typename T> class DenseOut {
 public:
  explicit DenseOut(const View& v, OutStart start = OutStart::Unspecified) : view_(v) {
    if (v.dtype == dtype_of<T>::value && v.is_contiguous()) {
      ptr_ = v.ptr<T>();
    } else {
      copy_.emplace(dense_copy_memory(), v.numel());
      if (start == OutStart::CurrentValues) gather_dense(copy_->get(), v);
      ptr_ = copy_->get();
      staged_ = true;
    }
  }
  T* get() const { return ptr_; }
  T& operator[](int64_t i) const { return ptr_[i]; }
  // Whether get() is a staging copy that commit() scatters (then worth
  // keeping in the cache, not streaming past it).
  bool staged() const { return staged_; }
  void commit() const {
    if (staged_) scatter_dense(view_, ptr_);
  }

 private:
  View view_;
  std::optional<Scratch<T>> copy_;
  T* ptr_ = nullptr;
  bool staged_ = false;
};

}  // namespace anvil::cpu
