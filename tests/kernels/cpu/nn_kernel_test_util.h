#pragma once
// Test-side tensors for calling the CPU backend directly: a std::vector
// buffer with a View over it in any layout (strided, transposed, broadcast),
// plus element access through the strides, written independently of the
// kernels' own dense_buffer.h so the tests do not check the code with itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "kernels/runtime.h"
#include "kernels/view.h"

namespace anvil::test {

inline Runtime& cpu() { return runtime_for(DeviceType::CPU); }

// A buffer and a View over it.
template <typename T> struct TestTensor {
  std::vector<T> storage;
  View view;
  TestTensor() = default;
  TestTensor(const TestTensor&) = delete;  // the view points into storage
  TestTensor& operator=(const TestTensor&) = delete;
  TestTensor(TestTensor&& o) noexcept : storage(std::move(o.storage)), view(o.view) { view.data = storage.data(); }
  TestTensor& operator=(TestTensor&& o) noexcept {
    storage = std::move(o.storage);
    view = o.view;
    view.data = storage.data();
    return *this;
  }
};

inline int64_t storage_span(const Shape& shape, const Shape& strides) {
  int64_t span = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    span += (shape[d] - 1) * strides[d];
  }
  return span;
}

// Strides of a layout whose dims are stored in the order `order` (outermost
// first) with `gap` unused elements after each run of the innermost stored dim.
inline Shape strides_in_order(const Shape& shape, const std::vector<int>& order, int64_t gap = 0) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (int i = static_cast<int>(order.size()) - 1; i >= 0; --i) {
    const int d = order[i];
    strides[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
    if (i == static_cast<int>(order.size()) - 1) s += gap;
  }
  return strides;
}

// Column-major-ish, padded: every dim strided, none contiguous.
inline Shape reversed_padded_strides(const Shape& shape) {
  std::vector<int> order(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) order[i] = static_cast<int>(shape.size() - 1 - i);
  Shape strides = strides_in_order(shape, order, 3);
  for (auto& s : strides) s *= 2;  // and no unit stride anywhere
  return strides;
}

template <typename T> T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}
template <typename T> double to_double(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

// A tensor of the given shape and strides filled with uniform values in [lo, hi).
template <typename T>
TestTensor<T> random_tensor(const Shape& shape, const Shape& strides, std::mt19937& rng, double lo = -1,
                            double hi = 1) {
  TestTensor<T> t;
  t.storage.resize(static_cast<size_t>(storage_span(shape, strides)));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (auto& v : t.storage) v = from_double<T>(dist(rng));
  t.view = View{t.storage.data(), dtype_of<T>::value, shape, strides};
  return t;
}
template <typename T>
TestTensor<T> random_tensor(const Shape& shape, std::mt19937& rng, double lo = -1, double hi = 1) {
  return random_tensor<T>(shape, contiguous_strides(shape), rng, lo, hi);
}
// Filled with `value` (NaN by default, so unwritten outputs show up).
template <typename T> TestTensor<T> filled_tensor(const Shape& shape, const Shape& strides, double value = NAN) {
  TestTensor<T> t;
  t.storage.assign(static_cast<size_t>(storage_span(shape, strides)), from_double<T>(value));
  t.view = View{t.storage.data(), dtype_of<T>::value, shape, strides};
  return t;
}
template <typename T> TestTensor<T> filled_tensor(const Shape& shape, double value = NAN) {
  return filled_tensor<T>(shape, contiguous_strides(shape), value);
}
// A contiguous tensor holding the given values.
template <typename T> TestTensor<T> tensor_of(const Shape& shape, const std::vector<double>& values) {
  TestTensor<T> t = filled_tensor<T>(shape, 0.0);
  for (size_t i = 0; i < values.size(); ++i) t.storage[i] = from_double<T>(values[i]);
  return t;
}

inline int64_t offset_of(const View& v, const Shape& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * v.strides[d];
  return off;
}

// Element of v at multi-index idx, as double.
inline double at(const View& v, const Shape& idx) {
  const int64_t off = offset_of(v, idx);
  return visit_dtype(v.dtype, [&](auto tag) { return to_double(v.ptr<decltype(tag)>()[off]); });
}
inline void set_at(const View& v, const Shape& idx, double value) {
  const int64_t off = offset_of(v, idx);
  visit_dtype(v.dtype, [&](auto tag) { v.ptr<decltype(tag)>()[off] = from_double<decltype(tag)>(value); });
}

// Calls f(idx) for every multi-index of shape in row-major order.
inline void for_each_index(const Shape& shape, const std::function<void(const Shape&)>& f) {
  for (auto s : shape)
    if (s == 0) return;
  Shape idx(shape.size(), 0);
  while (true) {
    f(idx);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// All elements of v in row-major order, as double.
inline std::vector<double> values(const View& v) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(v.numel()));
  for_each_index(v.shape, [&](const Shape& idx) { out.push_back(at(v, idx)); });
  return out;
}

// Expects |actual - expected| <= atol + rtol * |expected| elementwise.
inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected, double atol,
                         double rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool ok = std::isnan(expected[i]) ? std::isnan(actual[i])
                                            : std::abs(actual[i] - expected[i]) <= atol + rtol * std::abs(expected[i]);
    if (!ok && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
  }
}

// The message of the anvil::Error that f throws ("" when it throws none).
template <typename F> std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace anvil::test
