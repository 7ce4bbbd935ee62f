#pragma once
// Helpers shared by the op tests: naive reference reductions over host
// values, second-order gradient checks, error-message assertions, and a
// tensor that claims to live on a GPU (for device-mismatch errors; its
// memory is never touched because the ops reject it first).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "tests/core/gradcheck.h"

namespace anvil::testing {

// Asserts that `stmt` throws anvil::Error whose message contains `text`.
#define EXPECT_ANVIL_ERROR(stmt, text) \
  do { \
    try { \
      stmt; \
      ADD_FAILURE() << "expected anvil::Error from: " #stmt; \
    } catch (const ::anvil::Error& anvil_error_) { \
      EXPECT_NE(std::string(anvil_error_.what()).find(text), std::string::npos) \
          << "message \"" << anvil_error_.what() << "\" does not contain \"" << (text) << "\""; \
    } \
  } while (0)

// Row-major multi-index of a linear index.
inline std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    int64_t s = shape[d] > 0 ? shape[d] : 1;
    idx[d] = i % s;
    i /= s;
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

// The values of each reduced slice of x (in row-major order within the
// slice), one list per output element in keepdim row-major order.
inline std::vector<std::vector<double>> slices(const Tensor& x, const std::vector<int64_t>& dims) {
  Shape shape = x.shape();
  std::vector<bool> reduced(shape.size(), dims.empty());
  for (int64_t d : dims) reduced[d < 0 ? d + static_cast<int64_t>(shape.size()) : d] = true;
  Shape keep = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) keep[d] = 1;
  std::vector<double> v = x.to_vector<double>();
  int64_t outputs = 1;
  for (int64_t s : keep) outputs *= s;
  std::vector<std::vector<double>> out(static_cast<size_t>(outputs));
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    auto idx = unravel(i, shape);
    for (size_t d = 0; d < shape.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    out[ravel(idx, keep)].push_back(v[i]);
  }
  return out;
}

inline std::vector<double> naive_reduce(const Tensor& x, const std::vector<int64_t>& dims,
                                        const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> r;
  for (auto& s : slices(x, dims)) r.push_back(f(s));
  return r;
}

inline void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at element " << i;
}

inline TensorOptions f64() { return TensorOptions().dtype(kFloat64); }

// The gradient of sum(fn(in) * weights) w.r.t. input 0, computed with
// create_graph: gradcheck of this function checks second derivatives.
inline TensorFn first_derivative(TensorFn fn, Tensor weights) {
  return [fn, weights](const std::vector<Tensor>& in) {
    EnableGradGuard grad_mode;
    Tensor y = (fn(in) * weights).sum();
    return autograd::grad({y}, {in[0]}, {}, {false, true}, true)[0];
  };
}

inline ::testing::AssertionResult gradgradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs) {
  Tensor out;
  {
    NoGradGuard ng;
    out = fn(inputs);
  }
  return gradcheck(first_derivative(fn, randn(out.shape(), f64())), inputs);
}

// A tensor that says it is on cuda:0 without any GPU memory behind it.
inline Tensor fake_cuda_tensor(const Shape& shape, DType dtype = kFloat32) {
  static double dummy[1];
  return from_blob(dummy, shape, TensorOptions().dtype(dtype).device(Device::cuda(0)));
}

}  // namespace anvil::testing
