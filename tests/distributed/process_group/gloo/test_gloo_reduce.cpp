// The element-wise reduce functions handed to Gloo (distributed/process_group/gloo/gloo_reduce.h):
// the float16/bfloat16 sum, converted in blocks with core/convert_arrays.h,
// gives add<T>'s bits on every element, at lengths around its block size and
// in place. Where both operands are NaN, which one's sign the float add keeps
// depends on the operand order the compiler picked: NaN is all that is checked.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/convert_arrays.h"
#include "distributed/process_group/gloo/gloo_reduce.h"

namespace anvil::distributed {
namespace {

// Without the vector kernels (no Highway, or ANVIL_CPU_VECTOR=off) there is
// nothing to compare: the sum is add<T> itself, scalar against scalar.
constexpr const char* kNoVectorKernels = "vector kernels off: the sum is add<T> itself, scalar against scalar";

template <typename T> void check_sum_matches_elementwise_add(DType dtype) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> bits(0, 65535);
  const gloo_detail::ReduceFunc sum = gloo_detail::reduce_func(dtype, ReduceOp::Sum, "test");
  for (size_t n : {size_t{1}, size_t{7}, size_t{511}, size_t{512}, size_t{513}, size_t{1031}, size_t{65537}}) {
    std::vector<T> a(n), b(n), c(n);
    for (size_t i = 0; i < n; ++i) {
      a[i].bits = static_cast<uint16_t>(bits(rng));
      b[i].bits = static_cast<uint16_t>(bits(rng));
    }
    sum(c.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const T want = gloo_detail::add<T>(a[i], b[i]);
      if (std::isnan(static_cast<float>(want)))
        ASSERT_TRUE(std::isnan(static_cast<float>(c[i]))) << "element " << i;
      else
        ASSERT_EQ(c[i].bits, want.bits) << "n " << n << ", element " << i;
    }
    std::vector<T> in_place = a;
    sum(in_place.data(), in_place.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(in_place[i].bits, c[i].bits) << "in place, n " << n << ", element " << i;
  }
}

TEST(GlooReduce, Float16SumIsElementwiseAddBitForBit) {
  if (!anvil::convert_array_vectorized()) GTEST_SKIP() << kNoVectorKernels;
  check_sum_matches_elementwise_add<Half>(kFloat16);
}
TEST(GlooReduce, BFloat16SumIsElementwiseAddBitForBit) {
  if (!anvil::convert_array_vectorized()) GTEST_SKIP() << kNoVectorKernels;
  check_sum_matches_elementwise_add<BFloat16>(kBFloat16);
}

}  // namespace
}  // namespace anvil::distributed
