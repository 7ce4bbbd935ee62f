// index_select / index_add / gather / scatter_add / embedding: values against
// naive loops over host data, gradients, and bad indices.
#include <gtest/gtest.h>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;
using testing::gradgradcheck;

Tensor index_of(std::vector<int64_t> v, const Shape& shape = {}) { return from_vector(v, shape); }

TEST(IndexSelect, MatchesNaiveAlongEachDim) {
  Tensor x = randn({4, 5, 3}, f64());
  auto vx = x.to_vector<double>();
  Tensor idx = index_of({3, 0, 3, 1});
  auto vi = idx.to_vector<int64_t>();
  for (int64_t dim : {0, 1, 2, -1}) {
    SCOPED_TRACE(dim);
    int64_t d = dim < 0 ? dim + 3 : dim;
    if (d == 2) {  // dim 2 has size 3
      idx = index_of({2, 0, 2, 1});
      vi = idx.to_vector<int64_t>();
    }
    Tensor out = index_select(x, dim, idx);
    Shape want = x.shape();
    want[d] = 4;
    ASSERT_EQ(out.shape(), want);
    auto vo = out.to_vector<double>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto pos = testing::unravel(i, want);
      pos[d] = vi[pos[d]];
      EXPECT_EQ(vo[i], vx[testing::ravel(pos, x.shape())]);
    }
  }
}

TEST(IndexSelect, Int32IndexNonContiguousInputAndEmptyIndex) {
  Tensor x = randn({3, 4}, f64()).t();  // [4, 3]
  Tensor i32 = from_vector(std::vector<int32_t>{2, 2, 0});
  Tensor out = index_select(x, 0, i32);
  auto vx = x.contiguous().to_vector<double>(), vo = out.to_vector<double>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(vo[r * 3 + c], vx[(r == 2 ? 0 : 2) * 3 + c]);
  EXPECT_EQ(index_select(x, 1, index_of({}, {0})).shape(), (Shape{4, 0}));
}

TEST(IndexSelect, BadInputs) {
  Tensor x = randn({4, 3});
  EXPECT_ANVIL_ERROR(index_select(x, 0, index_of({0, 4})), "index_select: index 4 is out of range");
  EXPECT_ANVIL_ERROR(index_select(x, 1, index_of({-1})), "index_select");
  EXPECT_ANVIL_ERROR(index_select(x, 0, ones({2}, kFloat32)), "int64");
  EXPECT_ANVIL_ERROR(index_select(x, 0, index_of({0, 1, 2, 0}, {2, 2})), "1-D");
  EXPECT_ANVIL_ERROR(index_select(x, 2, index_of({0})), "index_select");
  EXPECT_ANVIL_ERROR(index_select(x, 0, testing::fake_cuda_tensor({2}, kInt64)), "same device");
}

TEST(IndexAdd, AccumulatesRepeatedIndices) {
  Tensor self = randn({4, 2}, f64()), src = randn({3, 2}, f64());
  Tensor out = index_add(self, 0, index_of({1, 3, 1}), src);
  auto want = self.to_vector<double>();
  auto vs = src.to_vector<double>();
  int64_t rows[] = {1, 3, 1};
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 2; ++c) want[rows[i] * 2 + c] += vs[i * 2 + c];
  expect_near_all(out.to_vector<double>(), want, 1e-15);
  EXPECT_ANVIL_ERROR(index_add(self, 0, index_of({1, 3}), src), "index_add");
  EXPECT_ANVIL_ERROR(index_add(self, 0, index_of({1, 3, 9}), src), "out of range");
  EXPECT_ANVIL_ERROR(index_add(self, 0, index_of({1, 3, 1}), src.to(kFloat32)), "same dtype");
}

TEST(Gather, MatchesNaive) {
  Tensor x = randn({3, 4}, f64());
  auto vx = x.to_vector<double>();
  Tensor i0 = randint(0, 3, {2, 4});  // along dim 0
  auto v0 = i0.to_vector<int64_t>();
  auto g0 = gather(x, 0, i0).to_vector<double>();
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(g0[r * 4 + c], vx[v0[r * 4 + c] * 4 + c]);
  Tensor i1 = randint(0, 4, {3, 6});  // along dim 1, index wider than x
  auto v1 = i1.to_vector<int64_t>();
  Tensor g1 = gather(x, -1, i1);
  EXPECT_EQ(g1.shape(), (Shape{3, 6}));
  auto vg1 = g1.to_vector<double>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(vg1[r * 6 + c], vx[r * 4 + v1[r * 6 + c]]);
  // Smaller index in a non-gathered dim, and a transposed input.
  Tensor xt = x.t();  // [4, 3]
  Tensor i2 = index_of({2, 0, 1, 1}, {2, 2});
  auto vt = xt.contiguous().to_vector<double>();
  auto g2 = gather(xt, 1, i2).to_vector<double>();
  EXPECT_EQ(g2, (std::vector<double>{vt[0 * 3 + 2], vt[0 * 3 + 0], vt[1 * 3 + 1], vt[1 * 3 + 1]}));
}

TEST(Gather, BadInputs) {
  Tensor x = randn({3, 4});
  EXPECT_ANVIL_ERROR(gather(x, 0, index_of({0, 1})), "gather: index must have as many dims");
  EXPECT_ANVIL_ERROR(gather(x, 0, index_of({3, 0}, {1, 2})), "gather: index 3 is out of range");
  EXPECT_ANVIL_ERROR(gather(x, 0, zeros({1, 5}, kInt64)), "larger than input");
  EXPECT_ANVIL_ERROR(gather(x, 0, zeros({1, 2}, kFloat64)), "gather");
}

TEST(ScatterAdd, MatchesNaive) {
  Tensor self = randn({3, 4}, f64()), src = randn({2, 5}, f64());
  Tensor idx = randint(0, 3, {2, 4});  // smaller than src in dim 1
  Tensor out = scatter_add(self, 0, idx, src);
  auto want = self.to_vector<double>();
  auto vs = src.to_vector<double>();
  auto vi = idx.to_vector<int64_t>();
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) want[vi[r * 4 + c] * 4 + c] += vs[r * 5 + c];
  expect_near_all(out.to_vector<double>(), want, 1e-15);
  // self is untouched (out-of-place).
  EXPECT_NE(out.storage().get(), self.storage().get());

  Tensor idx1 = randint(0, 4, {3, 3});
  auto vi1 = idx1.to_vector<int64_t>();
  Tensor src1 = randn({3, 3}, f64());
  auto vs1 = src1.to_vector<double>();
  auto want1 = self.to_vector<double>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) want1[r * 4 + vi1[r * 3 + c]] += vs1[r * 3 + c];
  expect_near_all(scatter_add(self, -1, idx1, src1).to_vector<double>(), want1, 1e-15);
}

TEST(ScatterAdd, BadInputs) {
  Tensor self = randn({3, 4});
  EXPECT_ANVIL_ERROR(scatter_add(self, 0, index_of({3}, {1, 1}), randn({1, 1})),
                     "scatter_add: index 3 is out of range");
  EXPECT_ANVIL_ERROR(scatter_add(self, 0, zeros({2, 2}, kInt64), randn({1, 2})), "larger than src");
  EXPECT_ANVIL_ERROR(scatter_add(self, 0, zeros({2, 2}, kInt64), randn({2, 2}, f64())), "same dtype");
  EXPECT_ANVIL_ERROR(scatter_add(self, 0, zeros({2}, kInt64), randn({2})), "same number of dims");
  EXPECT_ANVIL_ERROR(scatter_add(self, 0, zeros({2, 2}, kInt64), testing::fake_cuda_tensor({2, 2})), "same device");
}

TEST(Embedding, PicksRowsForAnyIndexShape) {
  Tensor w = randn({10, 3}, f64());
  auto vw = w.to_vector<double>();
  Tensor idx = index_of({9, 0, 4, 4, 2, 7}, {2, 3});
  Tensor out = embedding(w, idx);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 3}));
  auto vo = out.to_vector<double>();
  auto vi = idx.to_vector<int64_t>();
  for (int k = 0; k < 6; ++k)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(vo[k * 3 + c], vw[vi[k] * 3 + c]);
  EXPECT_EQ(embedding(w, index_of({5}, {1}).reshape({})).shape(), (Shape{3}));
  EXPECT_EQ(embedding(w, from_vector(std::vector<int32_t>{1, 2})).shape(), (Shape{2, 3}));

  EXPECT_ANVIL_ERROR(embedding(w, index_of({10})), "embedding: index 10 is out of range");
  EXPECT_ANVIL_ERROR(embedding(w, ones({2}, kFloat32)), "embedding");
  EXPECT_ANVIL_ERROR(embedding(randn({10}), index_of({1})), "embedding");
  EXPECT_ANVIL_ERROR(embedding(w, testing::fake_cuda_tensor({2}, kInt64)), "same device");
}

// --- gradients ---

TEST(IndexingGrad, IndexSelectGatherScatterEmbedding) {
  Tensor rep = index_of({2, 0, 2, 3});  // repeated index: gradients add up
  EXPECT_TRUE(
      gradcheck([rep](const std::vector<Tensor>& in) { return index_select(in[0], 0, rep); }, {randn({4, 3}, f64())}));
  EXPECT_TRUE(gradcheck([rep](const std::vector<Tensor>& in) { return index_select(in[0].t(), 1, rep); },
                        {randn({4, 3}, f64())}));
  Tensor gi = randint(0, 3, {4, 5});
  EXPECT_TRUE(gradcheck([gi](const std::vector<Tensor>& in) { return gather(in[0], 0, gi); }, {randn({3, 5}, f64())}));
  Tensor si = randint(0, 3, {2, 3});
  EXPECT_TRUE(gradcheck([si](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, si, in[1]); },
                        {randn({3, 4}, f64()), randn({2, 5}, f64())}));
  Tensor ai = index_of({1, 1, 0});
  EXPECT_TRUE(gradcheck([ai](const std::vector<Tensor>& in) { return index_add(in[0], 1, ai, in[1]); },
                        {randn({2, 4}, f64()), randn({2, 3}, f64())}));
  Tensor ei = index_of({3, 1, 3, 0, 1, 1}, {3, 2});
  EXPECT_TRUE(gradcheck([ei](const std::vector<Tensor>& in) { return embedding(in[0], ei); }, {randn({5, 2}, f64())}));
}

TEST(IndexingGrad, EmbeddingGradientCountsRepeats) {
  Tensor w = randn({4, 2}, f64()).requires_grad_();
  embedding(w, index_of({1, 3, 1, 1})).sum().backward();
  expect_near_all(w.grad().to_vector<double>(), {0, 0, 3, 3, 0, 0, 1, 1}, 0);
}

TEST(IndexingGrad, SecondOrder) {
  Tensor gi = randint(0, 3, {4, 2});
  EXPECT_TRUE(gradgradcheck([gi](const std::vector<Tensor>& in) { return gather(in[0] * in[0], 0, gi); },
                            {randn({3, 2}, f64())}));
  Tensor rep = index_of({1, 0, 1});
  EXPECT_TRUE(gradgradcheck([rep](const std::vector<Tensor>& in) { return index_select(in[0] * in[0], 1, rep); },
                            {randn({2, 3}, f64())}));
  Tensor si = randint(0, 2, {2, 2});
  EXPECT_TRUE(gradgradcheck(
      [si](const std::vector<Tensor>& in) { return scatter_add(in[0] * in[0], 1, si, in[0].slice(1, 0, 2) * 2.0); },
      {randn({2, 3}, f64())}));
}

}  // namespace
}  // namespace anvil
