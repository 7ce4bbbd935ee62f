// einsum against a brute-force reference (every assignment of every label,
// products summed into the output), against matmul for the batched forms,
// its gradients against finite differences, and the equations it refuses.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::gradcheck;
using testing::max_abs_diff;

// Letters-only equations with an explicit "->".
Tensor naive_einsum(const std::string& eq, const std::vector<Tensor>& ops) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string cur;
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') {
      terms.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  terms.push_back(cur);
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = ops[i].size(static_cast<int64_t>(d));
  std::vector<char> labels;
  for (auto& [c, s] : size) labels.push_back(c);
  std::vector<std::vector<double>> vals;
  for (const Tensor& t : ops) vals.push_back(t.to_vector<double>());
  Shape out_shape;
  for (char c : out) out_shape.push_back(size[c]);
  std::vector<double> result(static_cast<size_t>(numel_of(out_shape)), 0.0);
  std::map<char, int64_t> at;
  for (char c : labels) at[c] = 0;
  auto flat = [&](const std::string& term, const Shape& shape) {
    int64_t f = 0;
    for (size_t d = 0; d < term.size(); ++d) f = f * shape[d] + at[term[d]];
    return f;
  };
  while (true) {
    double p = 1;
    for (size_t i = 0; i < ops.size(); ++i) p *= vals[i][static_cast<size_t>(flat(terms[i], ops[i].shape()))];
    result[static_cast<size_t>(flat(out, out_shape))] += p;
    size_t k = 0;
    for (; k < labels.size(); ++k) {
      if (++at[labels[k]] < size[labels[k]]) break;
      at[labels[k]] = 0;
    }
    if (k == labels.size()) break;
  }
  return from_vector<double>(result, {static_cast<int64_t>(result.size())}).reshape(out_shape);
}

void expect_matches_naive(const std::string& eq, const std::vector<Tensor>& ops) {
  Tensor got = einsum(eq, ops), want = naive_einsum(eq, ops);
  EXPECT_EQ(got.shape(), want.shape()) << eq;
  EXPECT_LT(max_abs_diff(got, want), 1e-10) << eq;
}

Tensor r(const Shape& s) { return randn(s, kFloat64); }

TEST(Einsum, MatchesBruteForce) {
  manual_seed(1);
  expect_matches_naive("ij,jk->ik", {r({3, 4}), r({4, 5})});
  expect_matches_naive("bij,bjk->bik", {r({2, 3, 4}), r({2, 4, 2})});
  expect_matches_naive("ij->ji", {r({3, 4})});
  expect_matches_naive("ij->j", {r({3, 4})});
  expect_matches_naive("ij->", {r({3, 4})});
  expect_matches_naive("ii->i", {r({4, 4})});
  expect_matches_naive("ii->", {r({4, 4})});
  expect_matches_naive("iij->j", {r({3, 3, 2})});
  expect_matches_naive("iji->ij", {r({3, 2, 3})});
  expect_matches_naive("i,j->ij", {r({3}), r({4})});
  expect_matches_naive("i,i->", {r({5}), r({5})});
  expect_matches_naive("i,i->i", {r({5}), r({5})});
  expect_matches_naive("bhqd,bhkd->bhqk", {r({2, 2, 3, 4}), r({2, 2, 5, 4})});
  expect_matches_naive("ij,jk,kl->il", {r({2, 3}), r({3, 4}), r({4, 2})});
  expect_matches_naive("ijk,jil->kl", {r({2, 3, 4}), r({3, 2, 5})});
  expect_matches_naive("abc,cd,b->da", {r({2, 3, 4}), r({4, 2}), r({3})});
  expect_matches_naive("ij,kl->ijkl", {r({2, 3}), r({2, 2})});
  expect_matches_naive("Ab,bC->CA", {r({2, 3}), r({3, 4})});
}

TEST(Einsum, ImplicitOutputIsTheSingleLabelsSorted) {
  manual_seed(2);
  Tensor a = r({3, 4}), b = r({4, 5});
  EXPECT_LT(max_abs_diff(einsum("ij,jk", {a, b}), matmul(a, b)), 1e-12);
  EXPECT_LT(max_abs_diff(einsum("ba,bc", {a, b.narrow(0, 0, 3)}), naive_einsum("ba,bc->ac", {a, b.narrow(0, 0, 3)})),
            1e-12);
  EXPECT_NEAR(einsum("ii", {a.narrow(1, 0, 3)}).item<double>(),
              naive_einsum("ii->", {a.narrow(1, 0, 3)}).item<double>(), 1e-12);
  EXPECT_EQ(einsum("ij", {a}).shape(), (Shape{3, 4}));
  EXPECT_EQ(einsum("ji", {a}).shape(), (Shape{4, 3}));  // implicit: i then j, a transpose
}

TEST(Einsum, EllipsisBroadcastsLeadingDims) {
  manual_seed(3);
  Tensor a = r({2, 1, 3, 4}), b = r({5, 4, 2});
  EXPECT_LT(max_abs_diff(einsum("...ij,...jk->...ik", {a, b}), matmul(a, b)), 1e-12);
  EXPECT_LT(max_abs_diff(einsum("...ij,...jk", {a, b}), matmul(a, b)), 1e-12);
  Tensor x = r({2, 3, 4});
  EXPECT_LT(max_abs_diff(einsum("...i->...", {x}), x.sum(-1)), 1e-12);
  EXPECT_LT(max_abs_diff(einsum("i...->...i", {x}), x.permute({1, 2, 0})), 1e-12);
  EXPECT_LT(max_abs_diff(einsum("...ij->ij", {x}), x.sum(0)), 1e-12);  // dims under "..." missing from the output sum
  // A size-1 labelled dim broadcasts against the same label elsewhere.
  Tensor c = r({3, 1}), d = r({3, 4});
  EXPECT_LT(max_abs_diff(einsum("ij,ij->ij", {c, d}), c * d), 1e-12);
}

TEST(Einsum, WorksInFloat32AndOnNonContiguousInput) {
  manual_seed(4);
  Tensor a = randn({4, 3}).t(), b = randn({4, 5});
  EXPECT_LT(max_abs_diff(einsum("ij,jk->ik", {a, b}), matmul(a, b)), 1e-5);
  EXPECT_EQ(einsum("ij,jk->ik", {a, b}).dtype(), kFloat32);
}

TEST(Einsum, EmptyDimsGiveZerosOrEmptyResults) {
  Tensor z = einsum("ij,jk->ik", {r({2, 0}), r({0, 3})});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(einsum("ij,jk->ik", {r({0, 2}), r({2, 3})}).shape(), (Shape{0, 3}));
  EXPECT_EQ(einsum("ii->i", {r({0, 0})}).shape(), (Shape{0}));
  EXPECT_EQ(einsum("ij->", {r({0, 4})}).item<double>(), 0.0);
}

TEST(Einsum, Gradcheck) {
  manual_seed(5);
  for (const char* eq :
       {"ij,jk->ik", "bij,bkj->bik", "ii->i", "iij->", "i,j->ij", "ij,jk,kl->il", "...ij,...j->...i"}) {
    std::vector<Tensor> in;
    const std::string e = eq;
    if (e == "ij,jk->ik") in = {r({2, 3}), r({3, 2})};
    if (e == "bij,bkj->bik") in = {r({2, 2, 3}), r({2, 2, 3})};
    if (e == "ii->i") in = {r({3, 3})};
    if (e == "iij->") in = {r({2, 2, 3})};
    if (e == "i,j->ij") in = {r({3}), r({2})};
    if (e == "ij,jk,kl->il") in = {r({2, 2}), r({2, 3}), r({3, 2})};
    if (e == "...ij,...j->...i") in = {r({2, 3, 2}), r({2, 2})};
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return einsum(e, t); }, in)) << e;
  }
}

TEST(Einsum, RefusesBadEquations) {
  Tensor a = r({2, 3}), b = r({3, 4});
  EXPECT_ANVIL_ERROR(einsum("ij,jk->ik", {a}), "2 operand terms but 1 tensors");
  EXPECT_ANVIL_ERROR(einsum("ijk,jk->ik", {a, b}), "names 3 dims");
  EXPECT_ANVIL_ERROR(einsum("ij,ik->jk", {a, b}), "sizes must match or be 1");
  EXPECT_ANVIL_ERROR(einsum("i1,jk->ik", {a, b}), "unexpected character '1'");
  EXPECT_ANVIL_ERROR(einsum("ij,jk->iz", {a, b}), "does not appear in any operand");
  EXPECT_ANVIL_ERROR(einsum("ij,jk->ii", {a, b}), "more than once");
  EXPECT_ANVIL_ERROR(einsum("ii->i", {a}), "equal sizes for a diagonal");
  EXPECT_ANVIL_ERROR(einsum("..i->i", {a}), "\"...\"");
  EXPECT_ANVIL_ERROR(einsum("ij,jk->ik", {a, b.to(kFloat32)}), "share a dtype");
}

}  // namespace
}  // namespace anvil
