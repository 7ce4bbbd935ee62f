// The sweep over the reduction table (kernels/ops/reduce_ops.h): every row,
// in every dtype, through the CPU backend, over a strided view carrying the
// dtype's special values (op_sweep_inputs.h), along rows and along columns.
// Where the row accepts the dtype the result must match a reference written
// here from the definitions (not from the table's functors): sums and
// products in double (wrapping int64 for integers), NaN-winning max and min,
// two-pass variance, p-norms, the first index of the extreme. Elsewhere the
// backend must refuse with the op's and the dtype's names. No list of ops: a
// new row is swept by being in the table (and fails here until the reference
// below knows it). The CUDA sweep (tests/kernels/cuda/test_cuda_every_reduction.cpp)
// holds the GPU to these CPU results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/runtime.h"
#include "kernels/ops/reduce_ops.h"
#include "tests/kernels/ops/op_sweep_inputs.h"

namespace anvil {
namespace {

const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
const double kNormOrders[] = {2.0, 1.0, 0.0, 3.0, INFINITY, -INFINITY};

double nan_max(double a, double b) { return std::isnan(a) ? a : (std::isnan(b) || b > a) ? b : a; }
double nan_min(double a, double b) { return std::isnan(a) ? a : (std::isnan(b) || b < a) ? b : a; }

// The reduction of one slice `v`, from the definitions; integer inputs (`is_int`)
// sum and multiply in wrapping int64.
double reference(ReduceOp op, const std::vector<double>& v, bool is_int, const ReduceParams& p) {
  const double n = static_cast<double>(v.size());
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: {
      if (is_int) {
        uint64_t s = 0;
        for (double x : v) s += static_cast<uint64_t>(static_cast<int64_t>(x));
        return static_cast<double>(static_cast<int64_t>(s));
      }
      double s = 0;
      for (double x : v) s += x;
      return op == ReduceOp::Mean ? s / n : s;
    }
    case ReduceOp::Prod: {
      if (is_int) {
        uint64_t s = 1;
        for (double x : v) s *= static_cast<uint64_t>(static_cast<int64_t>(x));
        return static_cast<double>(static_cast<int64_t>(s));
      }
      double s = 1;
      for (double x : v) s *= x;
      return s;
    }
    case ReduceOp::Max:
    case ReduceOp::Min: {
      double m = v[0];
      for (double x : v) m = op == ReduceOp::Max ? nan_max(m, x) : nan_min(m, x);
      return m;
    }
    case ReduceOp::Var: {
      double mean = 0, m2 = 0;
      for (double x : v) mean += x;
      mean /= n;
      for (double x : v) m2 += (x - mean) * (x - mean);
      return m2 / std::max(n - static_cast<double>(p.correction), 0.0);
    }
    case ReduceOp::Norm: {
      if (std::isinf(p.p)) {
        double m = std::abs(v[0]);
        for (double x : v) m = p.p > 0 ? nan_max(m, std::abs(x)) : nan_min(m, std::abs(x));
        return m;
      }
      double s = 0;
      for (double x : v) s += p.p == 0 ? double(x != 0) : std::pow(std::abs(x), p.p);
      return p.p == 0 || p.p == 1 ? s : std::pow(s, 1.0 / p.p);
    }
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      size_t best = 0;
      for (size_t i = 0; i < v.size() && !std::isnan(v[best]); ++i) {
        if (std::isnan(v[i]) || (op == ReduceOp::ArgMax ? v[i] > v[best] : v[i] < v[best])) best = i;
      }
      return static_cast<double>(best);
    }
  }
  ADD_FAILURE() << "the reference does not know reduction " << ops::reduce_info(op).name;
  return 0;
}

// `scale` is the size of the terms: a sum's rounding depends on the order it
// adds in, and is bounded by eps times the sum of the terms' magnitudes.
bool close(double got, double want, double scale, DType dtype) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  const double rel = dtype == kFloat64 ? 1e-12 : dtype == kFloat32 ? 1e-6 : dtype == kFloat16 ? 1e-3 : 8e-3;
  return std::abs(got - want) <= rel * (1 + std::max(std::abs(want), scale));
}

// The magnitude of a slice's terms, for the tolerance of sums (see close()).
double term_scale(ReduceOp op, const std::vector<double>& v) {
  if (op != ReduceOp::Sum && op != ReduceOp::Mean) return 0;
  double s = 0;
  for (double x : v) s += std::abs(x);
  return op == ReduceOp::Mean ? s / static_cast<double>(v.size()) : s;
}

// Reduces dim `dim` of x ([7, 33], a strided view) on the CPU backend and
// checks each output against the reference, or checks the refusal.
void sweep(ReduceOp op, DType dtype, const Tensor& x, int64_t dim, const ReduceParams& p) {
  const ops::ReduceInfo& info = ops::reduce_info(op);
  std::string what = std::string(info.name) + " over dim " + std::to_string(dim) + " in " + dtype_name(dtype);
  if (op == ReduceOp::Norm) what += " (p = " + std::to_string(p.p) + ")";
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(dim)] = 1;
  Tensor out = empty(out_shape, TensorOptions(ops::reduce_result_dtype(op, dtype)));
  Runtime& cpu = runtime_for(DeviceType::CPU);
  if (!ops::reduce_accepts(op, dtype)) {
    try {
      kernel_for<kernel::Reduce>(cpu.type())(op, out.view_of(), x.view_of(), p);
      ADD_FAILURE() << what << ": ran, but the table refuses " << dtype_name(dtype);
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(info.name), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find(dtype_name(dtype)), std::string::npos) << what << ": " << message;
    }
    return;
  }
  kernel_for<kernel::Reduce>(cpu.type())(op, out.view_of(), x.view_of(), p);
  const std::vector<double> values = x.contiguous().to_vector<double>();
  const std::vector<double> got = out.contiguous().to_vector<double>();
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  const int64_t slices = dim == 1 ? rows : cols, length = dim == 1 ? cols : rows;
  std::vector<double> want(static_cast<size_t>(slices)), scale(static_cast<size_t>(slices));
  for (int64_t s = 0; s < slices; ++s) {
    std::vector<double> slice;
    for (int64_t k = 0; k < length; ++k)
      slice.push_back(values[static_cast<size_t>(dim == 1 ? s * cols + k : k * cols + s)]);
    want[static_cast<size_t>(s)] = reference(op, slice, !is_floating(dtype), p);
    scale[static_cast<size_t>(s)] = term_scale(op, slice);
  }
  // The reference rounded to the result dtype, as the kernel's result is.
  const DType result = out.dtype();
  const std::vector<double> want_rounded = from_vector(want, {slices}, result).to_vector<double>();
  for (int64_t s = 0; s < slices; ++s) {
    const double g = got[static_cast<size_t>(s)], w = want_rounded[static_cast<size_t>(s)];
    if (is_floating(result))
      EXPECT_TRUE(close(g, w, scale[static_cast<size_t>(s)], result))
          << what << ", slice " << s << ": got " << g << ", want " << w;
    else
      EXPECT_EQ(g, w) << what << ", slice " << s;
  }
}

TEST(ReduceOpTable, EveryOpInEveryDtypeMatchesTheDefinitionOrIsRefused) {
  for (int i = 0; i < ops::kReduceOpCount; ++i) {
    const auto op = static_cast<ReduceOp>(i);
    for (DType dtype : kAllDtypes) {
      // [7, 33] as a transposed view: each slice along dim 1 holds two special values.
      const Tensor x = test::sweep_input(dtype, 33, 7, 5 + i).transpose(0, 1);
      for (int64_t dim : {1, 0}) {  // along rows, then along columns (the backends' two drivers)
        if (op == ReduceOp::Norm) {
          for (double order : kNormOrders) sweep(op, dtype, x, dim, ReduceParams{1, order});
        } else {
          sweep(op, dtype, x, dim, ReduceParams{op == ReduceOp::Var ? 0 : 1, 2.0});
          if (op == ReduceOp::Var) sweep(op, dtype, x, dim, ReduceParams{1, 2.0});
        }
      }
    }
  }
}

TEST(ReduceOpTable, NamesAreUniqueAndTheEnumFollowsTheTable) {
  for (int i = 0; i < ops::kReduceOpCount; ++i) {
    EXPECT_EQ(&ops::reduce_info(static_cast<ReduceOp>(i)), &ops::kReduceOps[i]);
    for (int j = 0; j < i; ++j) EXPECT_STRNE(ops::kReduceOps[i].name, ops::kReduceOps[j].name);
  }
}

// What the table's columns mean for a user: result dtypes and empty slices.
TEST(ReduceOpTable, ResultDtypesAndEmptySlicesFollowTheTable) {
  const Tensor ints = from_vector<int32_t>({3, -4, 5});
  EXPECT_EQ(sum(ints).dtype(), ops::reduce_result_dtype(ReduceOp::Sum, kInt32));
  EXPECT_EQ(sum(ints).dtype(), kInt64);
  EXPECT_EQ(prod(ints).item<int64_t>(), -60);
  EXPECT_EQ(sum(from_vector<float>({1.5f})).dtype(), kFloat32);
  EXPECT_EQ(argmax(ints).dtype(), kInt64);

  const Tensor none = empty({0, 3});
  EXPECT_EQ(sum(none, {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(prod(none, {0}).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_TRUE(std::isnan(mean(none, {0}).to_vector<float>()[0]));
  EXPECT_THROW(amax(none, {0}), Error);
  EXPECT_THROW(norm(none, INFINITY, {0}), Error);
  EXPECT_EQ(norm(none, 2.0, {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
}

// Chan's merge of two finite means whose difference overflows: the variance
// is infinite, the mean finite, and further merges must not turn it into NaN.
TEST(ReduceOpTable, VarianceBeyondTheRangeIsInfiniteNotNaN) {
  for (bool float32 : {false, true}) {
    const double big = float32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    auto run = [&](auto zero) {
      using A = decltype(zero);
      const ops::reduce::Variance<A> var;
      auto acc = var.identity();
      for (double x : {big, -big, 0.5, 1.5, -2.5}) acc = var.combine(acc, var.lift(static_cast<A>(x)));
      EXPECT_FALSE(std::isnan(acc.mean)) << (float32 ? "float" : "double");
      EXPECT_TRUE(std::isinf(var.finish(acc, 5))) << (float32 ? "float" : "double");
    };
    if (float32)
      run(0.0f);
    else
      run(0.0);
  }
}

}  // namespace
}  // namespace anvil
