// core/random.cpp: the random factories and the global seed.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "core/random.h"

namespace anvil {
namespace {

// The 16-bit uniform fill rounded values just below `high` up to `high`
// itself: rand() in float16 returned 1.0 about once in 4096 draws (bfloat16:
// once in 512), so log(1 - u) became -inf.
TEST(Random, Uniform16BitStaysBelowHigh) {
  manual_seed(1234);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor u = rand({1 << 16}, dt).to(kFloat32);
    EXPECT_LT(u.max().item<float>(), 1.0f) << dt;
    EXPECT_GE(u.min().item<float>(), 0.0f) << dt;
  }
}

}  // namespace
}  // namespace anvil
