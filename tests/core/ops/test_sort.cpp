// sort, argsort and topk (core/ops/sort.h): the order against std::stable_sort
// of host values, PyTorch's NaN order and stability, dims, topk's k and
// largest, gradients scattered back through the indices, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::gradcheck;

TEST(Sort, RowsMatchAStableHostSortInBothDirections) {
  manual_seed(21);
  // Rounded values: many ties, so stability is exercised.
  const Tensor x = round(randn({6, 37}, kFloat32) * 3.0);
  const std::vector<float> v = x.to_vector<float>();
  for (bool descending : {false, true}) {
    auto [values, indices] = sort(x, 1, descending);
    EXPECT_EQ(indices.dtype(), kInt64);
    const std::vector<float> got_v = values.to_vector<float>();
    const std::vector<int64_t> got_i = indices.to_vector<int64_t>();
    for (int64_t r = 0; r < 6; ++r) {
      std::vector<int64_t> order(37);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return descending ? v[r * 37 + a] > v[r * 37 + b] : v[r * 37 + a] < v[r * 37 + b];
      });
      for (int64_t i = 0; i < 37; ++i) {
        EXPECT_EQ(got_i[r * 37 + i], order[i]) << "row " << r << " position " << i;
        EXPECT_EQ(got_v[r * 37 + i], v[r * 37 + order[i]]);
      }
    }
  }
}

TEST(Sort, NaNIsTheLargestValueAsPyTorch) {
  const Tensor x = from_vector<float>({2.0f, NAN, -1.0f, INFINITY, NAN, -INFINITY});
  auto [up, up_i] = sort(x);
  EXPECT_EQ(up_i.to_vector<int64_t>(), (std::vector<int64_t>{5, 2, 0, 3, 1, 4}));
  auto [down, down_i] = x.sort(-1, true);
  EXPECT_EQ(down_i.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 3, 0, 2, 5}));
  EXPECT_TRUE(std::isnan(down.to_vector<float>()[0]));
  EXPECT_EQ(argsort(x).to_vector<int64_t>(), up_i.to_vector<int64_t>());
}

TEST(Sort, AlongAnInnerDimAndOtherDtypes) {
  const Tensor x = from_vector<int32_t>({3, 1, 2, 0, 5, 4}, {3, 2});  // columns [3, 2, 5] and [1, 0, 4]
  auto [values, indices] = sort(x, 0);
  EXPECT_EQ(values.dtype(), kInt32);
  EXPECT_EQ(values.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 3, 1, 5, 4}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 0, 2, 2}));
  const Tensor b = from_vector<int64_t>({1, 0, 1, 0}).to(kBool);
  EXPECT_EQ(argsort(b, 0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(sort(zeros({0, 4}), 1).first.shape(), (Shape{0, 4}));
  EXPECT_DOUBLE_EQ(sort(scalar_tensor(1.5)).first.item<double>(), 1.5);
}

TEST(Topk, LargestOrSmallestKSorted) {
  const Tensor x = from_vector<float>({0.5f, 3.0f, -1.0f, 3.0f, 2.0f, 7.0f}, {2, 3});
  auto [values, indices] = x.topk(2);
  EXPECT_EQ(values.shape(), (Shape{2, 2}));
  EXPECT_EQ(values.to_vector<float>(), (std::vector<float>{3.0f, 0.5f, 7.0f, 3.0f}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2, 0}));
  auto [small, small_i] = topk(x, 1, 0, /*largest=*/false);
  EXPECT_EQ(small.to_vector<float>(), (std::vector<float>{0.5f, 2.0f, -1.0f}));
  EXPECT_EQ(small_i.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(topk(x, 0).first.shape(), (Shape{2, 0}));
}

TEST(Sort, GradientsScatterBackThroughTheIndices) {
  manual_seed(4);
  const Tensor x = randn({3, 6}, kFloat64);  // distinct values: no ties at the kinks
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return sort(in[0], 1, true).first; }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return sort(in[0], 0).first; }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return topk(in[0], 2, 1).first; }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return topk(in[0], 2, 0, false).first; }, {x}));
}

TEST(Sort, RefusesBadInput) {
  EXPECT_ANVIL_ERROR(sort(zeros({2, 3}), 2), "sort");
  EXPECT_ANVIL_ERROR(topk(zeros({2, 3}), 4), "topk: k = 4 out of range for dim 1 of size 3");
  EXPECT_ANVIL_ERROR(topk(zeros({2, 3}), -1), "topk: k = -1");
  EXPECT_ANVIL_ERROR(argsort(Tensor(), 0), "argsort");
}

}  // namespace
}  // namespace anvil
