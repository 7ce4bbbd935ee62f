// CPU reductions against naive loops over logical indices: every op, reduced
// dims inner, outer, in the middle and all of them, on contiguous and
// transposed inputs, sizes that take the threaded paths, and edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "kernels/shapes/matmul_checks.h"
#include "core/dispatch.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

using shapes::transposed;

Shape reduced_shape(const Shape& shape, const std::vector<int>& dims) {
  Shape out = shape;
  for (int d : dims) out[d] = 1;
  return out;
}

// The input elements (with their index along the reduced dims, row-major)
// that fall into each output element.
std::map<Shape, std::vector<double>> groups(const View& in, const std::vector<int>& dims) {
  std::map<Shape, std::vector<double>> g;
  for_each_index(in.shape, [&](const Shape& idx) {
    Shape key = idx;
    for (int d : dims) key[d] = 0;
    g[key].push_back(at(in, idx));
  });
  return g;
}

double naive(ReduceOp op, const std::vector<double>& xs, const ReduceParams& p) {
  const double n = static_cast<double>(xs.size());
  double acc = 0;
  switch (op) {
    case ReduceOp::Sum:
      for (double x : xs) acc += x;
      return acc;
    case ReduceOp::Mean:
      for (double x : xs) acc += x;
      return acc / n;
    case ReduceOp::Prod:
      acc = 1;
      for (double x : xs) acc *= x;
      return acc;
    case ReduceOp::Max:
      acc = -INFINITY;
      for (double x : xs) acc = std::max(acc, x);
      return acc;
    case ReduceOp::Min:
      acc = INFINITY;
      for (double x : xs) acc = std::min(acc, x);
      return acc;
    case ReduceOp::Var: {
      double mean = 0;
      for (double x : xs) mean += x;
      mean /= n;
      for (double x : xs) acc += (x - mean) * (x - mean);
      return acc / (n - static_cast<double>(p.correction));
    }
    case ReduceOp::Norm:
      if (std::isinf(p.p)) {
        for (double x : xs) acc = std::max(acc, std::fabs(x));
        return acc;
      }
      for (double x : xs) acc += std::pow(std::fabs(x), p.p);
      return std::pow(acc, 1 / p.p);
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      size_t best = 0;
      for (size_t i = 1; i < xs.size(); ++i)
        if (op == ReduceOp::ArgMax ? xs[i] > xs[best] : xs[i] < xs[best]) best = i;
      return static_cast<double>(best);
    }
  }
  return NAN;
}

template <typename T, typename Out = T>
void check_reduce(ReduceOp op, const View& in, const std::vector<int>& dims, const ReduceParams& p, double rtol,
                  const std::string& what) {
  const Shape out_shape = reduced_shape(in.shape, dims);
  auto out = filled_tensor<Out>(out_shape);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(op, out.view, in, p);
  const auto g = groups(in, dims);
  std::vector<double> expected;
  for_each_index(out_shape, [&](const Shape& idx) { expected.push_back(naive(op, g.at(idx), p)); });
  if (in.dtype == kFloat32 && (op == ReduceOp::Sum || op == ReduceOp::Mean)) {
    // float32 sums add in float lanes (as PyTorch's do): the error is bounded
    // by a few units of roundoff of sum |x| (the sum's condition), not of the
    // result, which cancellation can make arbitrarily small.
    const std::vector<double> got = values(out.view);
    size_t i = 0;
    int reported = 0;
    for_each_index(out_shape, [&](const Shape& idx) {
      const auto& xs = g.at(idx);
      double abs_sum = 0;
      for (double x : xs) abs_sum += std::fabs(x);
      if (op == ReduceOp::Mean) abs_sum /= static_cast<double>(xs.size());
      const double bound = 4 * std::ldexp(abs_sum, -24) + rtol * std::fabs(expected[i]);
      if (!(std::fabs(got[i] - expected[i]) <= bound) && reported++ < 5)
        ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << expected[i] << " within "
                      << bound;
      ++i;
    });
    return;
  }
  expect_close(values(out.view), expected, 1e-9, rtol, what);
}

const std::vector<std::vector<int>> kDimSets3 = {{0}, {1}, {2}, {0, 2}, {0, 1}, {1, 2}, {0, 1, 2}};

TEST(CpuReduce, AllFloatOpsOverEveryDimSet) {
  std::mt19937 rng(20);
  auto in = random_tensor<float>({5, 6, 7}, rng, -2, 2);
  auto positive = random_tensor<float>({5, 6, 7}, rng, 0.8, 1.2);  // products stay moderate
  for (const auto& dims : kDimSets3) {
    const std::string where = " over dims " + std::to_string(dims.size()) + " starting " + std::to_string(dims[0]);
    check_reduce<float>(ReduceOp::Sum, in.view, dims, {}, 1e-6, "sum" + where);
    check_reduce<float>(ReduceOp::Mean, in.view, dims, {}, 1e-6, "mean" + where);
    check_reduce<float>(ReduceOp::Max, in.view, dims, {}, 0, "max" + where);
    check_reduce<float>(ReduceOp::Min, in.view, dims, {}, 0, "min" + where);
    check_reduce<float>(ReduceOp::Prod, positive.view, dims, {}, 1e-5, "prod" + where);
    check_reduce<float>(ReduceOp::Var, in.view, dims, {1, 2}, 1e-5, "var" + where);
    check_reduce<float>(ReduceOp::Var, in.view, dims, {0, 2}, 1e-5, "var correction 0" + where);
    for (double pn : {1.0, 2.0, 3.0, static_cast<double>(INFINITY)})
      check_reduce<float>(ReduceOp::Norm, in.view, dims, {1, pn}, 1e-5, "norm " + std::to_string(pn) + where);
  }
}

TEST(CpuReduce, ArgMaxArgMinEveryDim) {
  std::mt19937 rng(21);
  auto in = random_tensor<double>({4, 9, 6}, rng);
  for (int d = 0; d < 3; ++d) {
    check_reduce<double, int64_t>(ReduceOp::ArgMax, in.view, {d}, {}, 0, "argmax dim " + std::to_string(d));
    check_reduce<double, int64_t>(ReduceOp::ArgMin, in.view, {d}, {}, 0, "argmin dim " + std::to_string(d));
  }
}

TEST(CpuReduce, ArgMaxFirstOccurrenceWinsAndNanIsMax) {
  auto in = tensor_of<int32_t>({2, 5}, {3, 7, 7, 1, 7, -4, -4, 0, -9, -9});
  auto out = filled_tensor<int64_t>({2, 1}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::ArgMax, out.view, in.view, {});
  EXPECT_EQ(out.storage, (std::vector<int64_t>{1, 2}));
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::ArgMin, out.view, in.view, {});
  EXPECT_EQ(out.storage, (std::vector<int64_t>{3, 3}));
  // Column-wise: the same rule when the reduced dim is not the fastest.
  auto cols = tensor_of<float>({3, 2}, {1, 5, 4, 5, 4, 2});
  auto col_out = filled_tensor<int64_t>({1, 2}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::ArgMax, col_out.view, cols.view, {});
  EXPECT_EQ(col_out.storage, (std::vector<int64_t>{1, 0}));

  auto with_nan = tensor_of<float>({5}, {1, NAN, 3, NAN, 0});
  auto one = filled_tensor<int64_t>({1}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::ArgMax, one.view, with_nan.view, {});
  EXPECT_EQ(one.storage[0], 1);
  auto mx = filled_tensor<float>({1}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Max, mx.view, with_nan.view, {});
  EXPECT_TRUE(std::isnan(mx.storage[0]));

  // Long rows (the unrolled path): a NaN anywhere wins, otherwise the true extreme.
  std::mt19937 rng(26);
  auto rows = random_tensor<double>({3, 37}, rng);
  rows.storage[13] = NAN;  // row 0, inside the unrolled part
  rows.storage[2 * 37 + 36] = NAN;  // row 2, in the tail
  auto ext = filled_tensor<double>({3, 1});
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
    kernel_for<kernel::Reduce>(DeviceType::CPU)(op, ext.view, rows.view, {});
    EXPECT_TRUE(std::isnan(ext.storage[0]));
    const std::vector<double> row1(rows.storage.begin() + 37, rows.storage.begin() + 74);
    EXPECT_EQ(ext.storage[1], naive(op, row1, {}));
    EXPECT_TRUE(std::isnan(ext.storage[2]));
  }
}

TEST(CpuReduce, TransposedAndPaddedInputs) {
  std::mt19937 rng(22);
  auto base = random_tensor<float>({9, 14}, rng);
  const View t = transposed(base.view);  // [14, 9]
  for (int d : {0, 1}) {
    check_reduce<float>(ReduceOp::Sum, t, {d}, {}, 1e-6, "transposed sum dim " + std::to_string(d));
    check_reduce<float>(ReduceOp::Max, t, {d}, {}, 0, "transposed max dim " + std::to_string(d));
    check_reduce<float, int64_t>(ReduceOp::ArgMin, t, {d}, {}, 0, "transposed argmin dim " + std::to_string(d));
    check_reduce<float>(ReduceOp::Var, t, {d}, {1, 2}, 1e-5, "transposed var dim " + std::to_string(d));
  }
  const Shape shape = {3, 4, 5};
  auto padded = random_tensor<double>(shape, reversed_padded_strides(shape), rng);
  for (const auto& dims : kDimSets3) {
    check_reduce<double>(ReduceOp::Sum, padded.view, dims, {}, 1e-12, "padded sum");
    check_reduce<double>(ReduceOp::Min, padded.view, dims, {}, 0, "padded min");
    check_reduce<double>(ReduceOp::Norm, padded.view, dims, {1, 2.0}, 1e-12, "padded norm");
  }
}

TEST(CpuReduce, BroadcastInputCountsRepeatedElements) {
  auto row = tensor_of<float>({1, 3}, {1, 2, 3});
  View expanded = row.view;
  expanded.shape = {4, 3};
  expanded.strides = {0, 1};
  check_reduce<float>(ReduceOp::Sum, expanded, {0}, {}, 0, "sum of expanded rows");
  check_reduce<float>(ReduceOp::Sum, expanded, {0, 1}, {}, 0, "sum of expanded all");
  check_reduce<float>(ReduceOp::Mean, expanded, {1}, {}, 1e-7, "mean of expanded");
}

// Shapes big enough (over kParallelGrain elements) for every threaded path:
// many rows, many columns, one long reduction, few columns over many rows.
TEST(CpuReduce, LargeShapesTakeThreadedPaths) {
  std::mt19937 rng(23);
  auto wide = random_tensor<float>({37, 8000}, rng);
  check_reduce<float>(ReduceOp::Sum, wide.view, {1}, {}, 1e-6, "row sums");
  check_reduce<float>(ReduceOp::Sum, wide.view, {0}, {}, 1e-6, "column sums");
  check_reduce<float>(ReduceOp::Var, wide.view, {0}, {1, 2}, 1e-5, "column var");
  check_reduce<float, int64_t>(ReduceOp::ArgMax, wide.view, {0}, {}, 0, "column argmax");
  check_reduce<float>(ReduceOp::Max, wide.view, {0, 1}, {}, 0, "full max");

  auto tall = random_tensor<float>({100000, 3}, rng);
  check_reduce<float>(ReduceOp::Sum, tall.view, {0}, {}, 1e-6, "few long columns");
  check_reduce<float>(ReduceOp::Min, tall.view, {0}, {}, 0, "few long columns min");
  check_reduce<float, int64_t>(ReduceOp::ArgMin, tall.view, {0}, {}, 0, "few long columns argmin");
  check_reduce<float>(ReduceOp::Var, tall.view, {0}, {1, 2}, 1e-5, "few long columns var");

  // conv bias gradient: [N, C, H, W] summed over N, H, W.
  auto nchw = random_tensor<float>({32, 8, 33, 35}, rng);
  check_reduce<float>(ReduceOp::Sum, nchw.view, {0, 2, 3}, {}, 1e-6, "bias gradient");
  check_reduce<float>(ReduceOp::Mean, nchw.view, {0, 2, 3}, {}, 1e-6, "channel mean");
}

TEST(CpuReduce, LongFloat32SumIsAccurate) {
  std::mt19937 rng(24);
  const int64_t n = 1 << 20;
  auto in = random_tensor<float>({n}, rng, 0, 1);
  double exact = 0;
  for (float v : in.storage) exact += v;
  auto out = filled_tensor<float>({1});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Sum, out.view, in.view, {});
  EXPECT_NEAR(out.storage[0], exact, exact * 1e-7);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Mean, out.view, in.view, {});
  EXPECT_NEAR(out.storage[0], exact / n, 1e-7);
  // Variance of data with a large offset needs a stable algorithm.
  for (auto& v : in.storage) v += 1000.0f;
  std::vector<double> xs(in.storage.begin(), in.storage.end());
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Var, out.view, in.view, {1, 2});
  EXPECT_NEAR(out.storage[0], naive(ReduceOp::Var, xs, {1, 2}), 1e-5);
}

// The float64 variance (correction 1) of column j of a rows x cols matrix.
double column_variance(const std::vector<float>& m, int64_t rows, int64_t cols, int64_t j) {
  std::vector<double> column;
  for (int64_t r = 0; r < rows; ++r) column.push_back(m[static_cast<size_t>(r * cols + j)]);
  return naive(ReduceOp::Var, column, {1, 2});
}

// var over the first dim merges the moments of runs of 256 rows (float
// lanes, each run after the first summed as differences from the mean of
// the runs before it): data with a large offset keeps its variance, a NaN or
// inf in a column makes that column's variance NaN (as PyTorch's), and the
// other columns are unaffected.
TEST(CpuReduce, ColumnVarianceOfOffsetDataIsAccurate) {
  std::mt19937 rng(25);
  std::normal_distribution<float> normal;
  const int64_t rows = 1000, cols = 33;
  auto in = filled_tensor<float>({rows, cols});
  for (float& v : in.storage) v = 1000.0f + normal(rng);
  in.storage[5 * cols + 3] = NAN;
  in.storage[700 * cols + 4] = INFINITY;
  auto out = filled_tensor<float>({1, cols});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Var, out.view, in.view, {1, 2});
  for (int64_t j = 0; j < cols; ++j) {
    if (j == 3 || j == 4) {
      EXPECT_TRUE(std::isnan(out.storage[j])) << "column " << j << " holds a NaN or inf: " << out.storage[j];
      continue;
    }
    const double want = column_variance(in.storage, rows, cols, j);
    EXPECT_NEAR(out.storage[j], want, want * 1e-5) << "column " << j;
  }
}

// Later runs of a column variance are summed as differences from the mean
// of the rows before them. Data that drifts (a ramp), that jumps by 1e4
// after the first run, or that starts far from where it settles keeps its
// variance against float64; 1100 rows are four runs and a part, 37 columns
// two vectors and a tail.
TEST(CpuReduce, ColumnVarianceOfDriftingDataIsAccurate) {
  std::mt19937 rng(26);
  std::normal_distribution<float> normal;
  const int64_t rows = 1100, cols = 37;
  auto in = filled_tensor<float>({rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float v = 100.0f + normal(rng);
      if (j % 3 == 0) v += 0.5f * static_cast<float>(r);  // a ramp
      if (j % 3 == 1 && r >= 300) v += 1e4f;  // a jump after the first run
      if (j % 3 == 2 && r < 10) v = -5e3f + normal(rng);  // a far start
      in.storage[r * cols + j] = v;
    }
  auto out = filled_tensor<float>({1, cols});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Var, out.view, in.view, {1, 2});
  for (int64_t j = 0; j < cols; ++j) {
    const double want = column_variance(in.storage, rows, cols, j);
    EXPECT_NEAR(out.storage[j], want, want * 1e-5) << "column " << j;
  }
}

// var over a run longer than 4096 floats merges the moments of 4096-float
// chunks (kernels/cpu/reduce.cpp): rows of 3 chunks and a part, data with a
// large offset, against float64; a NaN in one chunk or an inf in the last
// makes the row's variance NaN, and the other rows are unaffected.
TEST(CpuReduce, LongRunVarianceMergesChunks) {
  std::mt19937 rng(26);
  std::normal_distribution<float> normal;
  const int64_t rows = 4, cols = 3 * 4096 + 123;
  auto in = filled_tensor<float>({rows, cols});
  for (float& v : in.storage) v = 10000.0f + 3.0f * normal(rng);
  in.storage[1 * cols + 5000] = NAN;
  in.storage[2 * cols + cols - 1] = INFINITY;
  auto out = filled_tensor<float>({rows, 1});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Var, out.view, in.view, {1, 2});
  for (int64_t r = 0; r < rows; ++r) {
    if (r == 1 || r == 2) {
      EXPECT_TRUE(std::isnan(out.storage[r])) << "row " << r << " holds a NaN or inf: " << out.storage[r];
      continue;
    }
    const std::vector<double> row(in.storage.begin() + r * cols, in.storage.begin() + (r + 1) * cols);
    const double want = naive(ReduceOp::Var, row, {1, 2});
    EXPECT_NEAR(out.storage[r], want, want * 1e-5) << "row " << r;
  }
  auto all = filled_tensor<float>({1});
  const std::vector<double> first(in.storage.begin(), in.storage.begin() + cols);
  auto row0 = tensor_of<float>({cols}, first);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Var, all.view, row0.view, {0, 2});
  const double want = naive(ReduceOp::Var, first, {0, 2});
  EXPECT_NEAR(all.storage[0], want, want * 1e-5) << "correction 0";
}

TEST(CpuReduce, IntegerAndHalfInputs) {
  auto ints = tensor_of<int32_t>({2, 3}, {1, 2, 3, 4, 5, 2000000000});
  auto sums = filled_tensor<int64_t>({2, 1}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Sum, sums.view, ints.view,
                                              {});  // int32 summed into int64, no overflow
  EXPECT_EQ(sums.storage, (std::vector<int64_t>{6, 2000000009}));
  auto maxes = filled_tensor<int32_t>({1, 3}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Max, maxes.view, ints.view, {});
  EXPECT_EQ(maxes.storage, (std::vector<int32_t>{4, 5, 2000000000}));
  auto prods = filled_tensor<int64_t>({2, 1}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Prod, prods.view, ints.view, {});
  EXPECT_EQ(prods.storage, (std::vector<int64_t>{6, 40000000000LL}));

  std::mt19937 rng(25);
  auto h = random_tensor<Half>({6, 50}, rng);
  check_reduce<Half>(ReduceOp::Sum, h.view, {1}, {}, 2e-3, "half row sums");
  check_reduce<Half>(ReduceOp::Mean, h.view, {0}, {}, 2e-3, "half column means");
  auto bf = random_tensor<BFloat16>({6, 50}, rng);
  check_reduce<BFloat16>(ReduceOp::Max, bf.view, {1}, {}, 0, "bf16 row max");

  std::vector<uint8_t> flags = {1, 0, 1, 1};
  auto count = filled_tensor<int64_t>({1}, 0.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Sum, count.view, View{flags.data(), kBool, {4}, {1}}, {});
  EXPECT_EQ(count.storage[0], 3);

  const std::string msg = error_message([&] {
    auto m = filled_tensor<int32_t>({2, 1}, 0.0);
    kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Mean, m.view, ints.view, {});
  });
  EXPECT_NE(msg.find("mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(CpuReduce, EmptyReductions) {
  std::vector<float> none;
  const View empty{none.data(), kFloat32, {3, 0}, {0, 1}};
  auto out = filled_tensor<float>({3, 1});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Sum, out.view, empty, {});
  EXPECT_EQ(out.storage, (std::vector<float>{0, 0, 0}));
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Prod, out.view, empty, {});
  EXPECT_EQ(out.storage, (std::vector<float>{1, 1, 1}));
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Mean, out.view, empty, {});
  EXPECT_TRUE(std::isnan(out.storage[0]));
  const std::string msg =
      error_message([&] { kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Max, out.view, empty, {}); });
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
  // No outputs at all: nothing to do.
  auto no_out = filled_tensor<float>({0, 1});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Max, no_out.view, View{none.data(), kFloat32, {0, 4}, {4, 1}},
                                              {});
}

TEST(CpuReduce, ScalarAndSizeOneDims) {
  auto s = tensor_of<double>({}, {2.5});
  auto out = filled_tensor<double>({});
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Sum, out.view, s.view, {});
  EXPECT_EQ(out.storage[0], 2.5);
  // A reduced dim of size 1 leaves the values unchanged; argmax is 0.
  auto col = tensor_of<float>({3, 1}, {4, -1, 2});
  auto idx = filled_tensor<int64_t>({3, 1}, 9.0);
  kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::ArgMax, idx.view, col.view, {});
  EXPECT_EQ(idx.storage, (std::vector<int64_t>{0, 0, 0}));
}

TEST(CpuReduce, BadShapesThrow) {
  auto in = filled_tensor<float>({3, 4}, 1.0);
  auto wrong = filled_tensor<float>({2, 1}, 0.0);
  std::string msg =
      error_message([&] { kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::Sum, wrong.view, in.view, {}); });
  EXPECT_NE(msg.find("sum"), std::string::npos) << msg;
  auto two_dims = filled_tensor<int64_t>({1, 1}, 0.0);
  msg =
      error_message([&] { kernel_for<kernel::Reduce>(DeviceType::CPU)(ReduceOp::ArgMax, two_dims.view, in.view, {}); });
  EXPECT_NE(msg.find("argmax"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
