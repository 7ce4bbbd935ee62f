// The CUDA tests' comparison helper (tests/kernels/cuda/cuda_test_util.h),
// checked on the CPU so that it runs in every build: a helper that passed
// everything would make every CUDA test pass.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

TEST(CudaTestUtil, RandomTensorsAreSeededAndShaped) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    Tensor a = test::random_tensor({4, 5}, dt, 3);
    Tensor b = test::random_tensor({4, 5}, dt, 3);
    Tensor c = test::random_tensor({4, 5}, dt, 4);
    EXPECT_EQ(a.dtype(), dt);
    EXPECT_EQ(a.shape(), (Shape{4, 5}));
    EXPECT_TRUE(test::all_close(a, b, {0, 0})) << "same seed, same tensor";
    EXPECT_FALSE(test::all_close(a, c, {0, 0})) << "another seed, another tensor (" << dt << ")";
  }
  EXPECT_EQ(test::random_tensor({}, kFloat32, 1).dim(), 0);
  Tensor u = test::random_uniform_tensor({1000}, kFloat64, 2.0, 3.0, 1);
  EXPECT_GE(u.min().item<double>(), 2.0);
  EXPECT_LT(u.max().item<double>(), 3.0);
}

TEST(CudaTestUtil, ToleranceIsRelativePlusAbsolute) {
  Tensor want = from_vector<double>({1.0, 100.0, 0.0});
  EXPECT_TRUE(test::all_close(from_vector<double>({1.0 + 1e-6, 100.0 + 1e-4, 1e-7}), want, {1e-5, 1e-6}));
  auto r = test::all_close(from_vector<double>({1.0, 100.1, 0.0}), want, {1e-5, 1e-6});
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("1 of 3 elements differ"), std::string::npos) << r.message();
  EXPECT_NE(std::string(r.message()).find("flat index 1"), std::string::npos) << r.message();
}

TEST(CudaTestUtil, NanMeetsOnlyNanAndInfinityOnlyItself) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  Tensor want = from_vector<double>({nan, inf, -inf});
  EXPECT_TRUE(test::all_close(from_vector<double>({nan, inf, -inf}), want, {1, 1}));
  EXPECT_FALSE(test::all_close(from_vector<double>({0.0, inf, -inf}), want, {1, 1}));
  EXPECT_FALSE(test::all_close(from_vector<double>({nan, 1e300, -inf}), want, {1, 1}));
  EXPECT_FALSE(test::all_close(from_vector<double>({nan, inf, inf}), want, {1, 1}));
}

TEST(CudaTestUtil, ShapeAndDtypeMustMatch) {
  EXPECT_FALSE(test::all_close(zeros({2, 3}), zeros({3, 2})));
  EXPECT_FALSE(test::all_close(zeros({2}), zeros({2}, kFloat64)));
  EXPECT_EQ(test::tolerance_for(kInt64).rtol, 0);
  EXPECT_GT(test::tolerance_for(kBFloat16).rtol, test::tolerance_for(kFloat16).rtol);
}

}  // namespace
}  // namespace anvil
