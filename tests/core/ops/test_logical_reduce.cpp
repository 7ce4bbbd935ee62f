// all, any and logsumexp (core/ops/reduce.h): over all dims or some, keepdim,
// the empty cases (all true, any false, logsumexp -inf), NaN as true, the
// infinities through logsumexp, and its gradient (softmax).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::gradcheck;

TEST(LogicalReduce, AllAndAnyOverAllOrOneDim) {
  const Tensor x = from_vector<float>({1.0f, 0.0f, 2.0f, 3.0f, NAN, -1.0f}, {2, 3});
  EXPECT_EQ(all(x).dtype(), kBool);
  EXPECT_FALSE(all(x).item<bool>());
  EXPECT_TRUE(any(x).item<bool>());
  EXPECT_EQ(x.all(1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));  // NaN is non-zero
  EXPECT_EQ(x.any(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(all(x, 0, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(all(x, 0, true).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_FALSE(any(zeros({3}, kInt32)).item<bool>());
  EXPECT_TRUE(from_vector<int64_t>({1, 1}).to(kBool).all().item<bool>());
  EXPECT_EQ(all(x, Shape{0, 1}).dim(), 0);
}

TEST(LogicalReduce, EmptyInputsAsPyTorch) {
  EXPECT_TRUE(all(zeros({0})).item<bool>());
  EXPECT_FALSE(any(zeros({0})).item<bool>());
  EXPECT_EQ(any(zeros({2, 0}), 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(logsumexp(zeros({2, 0}), 1).to_vector<double>(), (std::vector<double>{-INFINITY, -INFINITY}));
}

TEST(LogicalReduce, LogsumexpIsStable) {
  const Tensor x = from_vector<double>({1000.0, 1000.0, -INFINITY, -INFINITY, INFINITY, 1.0}, {3, 2});
  const std::vector<double> y = logsumexp(x, 1).to_vector<double>();
  EXPECT_NEAR(y[0], 1000.0 + std::log(2.0), 1e-12);
  EXPECT_EQ(y[1], -INFINITY);
  EXPECT_EQ(y[2], INFINITY);
  manual_seed(8);
  const Tensor r = randn({3, 4}, kFloat64);
  const std::vector<double> v = r.to_vector<double>();
  const std::vector<double> got = r.logsumexp(-1, true).to_vector<double>();
  EXPECT_EQ(r.logsumexp(-1, true).shape(), (Shape{3, 1}));
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += std::exp(v[i * 4 + j]);
    EXPECT_NEAR(got[i], std::log(s), 1e-12);
  }
  EXPECT_EQ(logsumexp(from_vector<int64_t>({1, 2}), 0).dtype(), kFloat32);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return logsumexp(in[0], Shape{0, 1}); }, {r}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return logsumexp(in[0], 0); }, {r}));
}

// The errors name the op called (they run through sum and amax inside).
TEST(LogicalReduce, RefusesBadDims) {
  manual_seed(7);
  const Tensor x = randn({2, 3});
  EXPECT_ANVIL_ERROR(all(x, 3), "all: dim 3 is out of range for a tensor with 2 dims");
  EXPECT_ANVIL_ERROR(any(x, -3), "any: dim -3 is out of range");
  EXPECT_ANVIL_ERROR(all(x, Shape{1, -1}), "all: dim 1 appears more than once");
  EXPECT_ANVIL_ERROR(any(Tensor()), "any");
  EXPECT_ANVIL_ERROR(logsumexp(x, 2), "logsumexp: dim 2 is out of range");
  EXPECT_ANVIL_ERROR(x.logsumexp(Shape{0, 0}), "logsumexp: dim 0 appears more than once");
  EXPECT_ANVIL_ERROR(logsumexp(Tensor(), 0), "logsumexp");
  // An empty slice is fine for logsumexp (-inf), as PyTorch's.
  EXPECT_EQ(logsumexp(zeros({0, 3}), 0).to_vector<float>(), (std::vector<float>(3, -INFINITY)));
}

}  // namespace
}  // namespace anvil
