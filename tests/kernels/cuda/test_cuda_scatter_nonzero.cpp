// scatter (overwrite, multiply, deterministic) and nonzero on CUDA against
// the CPU backend, and the ops composed from them and from index_select /
// gather (index, index_put, masked_select, masked_scatter, take_along_dim)
// run on CUDA against the same calls on the CPU. Bad indices raise an
// anvil::Error at the next synchronising call.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/base/determinism.h"
#include "core/ops.h"
#include "kernels/cuda/index_errors.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using namespace anvil::indexing;
using test::all_close;
using test::random_tensor;

Tensor random_index(const Shape& shape, int64_t size, uint64_t seed) {
  std::mt19937_64 gen(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int64_t>(gen() % size);
  return from_vector<int64_t>(v, {n}).reshape(shape);
}

// [rows, cols]: in each column distinct values in [0, size).
Tensor unique_columns(int64_t rows, int64_t cols, int64_t size, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> v(static_cast<size_t>(rows * cols));
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<int64_t> perm(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), gen);
    for (int64_t r = 0; r < rows; ++r) v[r * cols + c] = perm[r];
  }
  return from_vector(v, {rows, cols});
}

struct DeterministicGuard {
  explicit DeterministicGuard(bool on) : was(deterministic_algorithms_enabled()) { use_deterministic_algorithms(on); }
  ~DeterministicGuard() { use_deterministic_algorithms(was); }
  bool was;
};

TEST(CudaScatter, OverwriteAndMultiplyEveryDtype) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dt);
    const Tensor self = random_tensor({40, 7}, dt, 1), src = random_tensor({30, 7}, dt, 2);
    const Tensor idx = unique_columns(25, 7, 40, 3);  // no repeats: any write order gives one answer
    EXPECT_TRUE(all_close(scatter(self.cuda(), 0, idx.cuda(), src.cuda()), scatter(self, 0, idx, src), {0, 0}));
    const Tensor idx1 = random_index({40, 3}, 7, 4);
    if (dt != kBool) {  // repeats: products in index order on both
      const Tensor factors = random_tensor({40, 3}, dt, 5);
      EXPECT_TRUE(all_close(scatter(self.cuda(), 1, idx1.cuda(), factors.cuda(), "multiply"),
                            scatter(self, 1, idx1, factors, "multiply"), test::tolerance_for(dt)));
      EXPECT_TRUE(all_close(scatter(self.cuda(), 1, idx1.cuda(), 3, "add"), scatter(self, 1, idx1, 3, "add"),
                            test::tolerance_for(dt)));
    }
    // Overwrite takes distinct indices per row (repeats would race, by design); a strided index.
    const Tensor rows = unique_columns(3, 40, 7, 6).t();
    EXPECT_TRUE(all_close(scatter(self.cuda(), -1, rows.cuda(), 1), scatter(self, -1, rows, 1), {0, 0}));
  }
}

TEST(CudaScatter, DeterministicOverwriteKeepsTheLastLikeTheCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  DeterministicGuard guard(true);
  const Tensor self = random_tensor({6, 50}, kFloat32, 5), src = random_tensor({100, 50}, kFloat32, 6);
  const Tensor idx = random_index({100, 50}, 6, 7);  // many repeats per column
  EXPECT_CUDA_CLOSE(scatter(self.cuda(), 0, idx.cuda(), src.cuda()), scatter(self, 0, idx, src), {0, 0});
  // In place into a strided view (a transpose), from a strided src.
  const Tensor t = random_tensor({50, 6}, kFloat32, 8), src_t = random_tensor({50, 100}, kFloat32, 9);
  Tensor tc = t.cuda(), view = tc.t();
  view.scatter_(0, idx.cuda(), src_t.cuda().t());
  Tensor view_cpu = t.clone().t();
  view_cpu.scatter_(0, idx, src_t.t());
  EXPECT_CUDA_CLOSE(tc, view_cpu.t(), {0, 0});
}

TEST(CudaScatter, BadIndexRaisesAtTheNextSync) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor self = zeros({4, 3}).cuda();
  const Tensor idx = from_vector(std::vector<int64_t>{1, 9, 0}, {1, 3}).cuda();
  try {
    Tensor out = scatter(self, 0, idx, ones({1, 3}).cuda());
    out.cpu();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scatter (on cuda:0): index 9 is out of range for dim 0 of size 4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(scatter(self, 0, idx.clamp(0, 3), ones({1, 3}).cuda()).cpu());  // cleared once raised
}

TEST(CudaNonzero, MatchesTheCpuAcrossTilesAndDtypes) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dt);
    for (const Shape& shape : {Shape{1}, Shape{7, 3}, Shape{3, 100, 5}, Shape{2, 2, 2, 2, 40}}) {
      const Tensor x = (random_tensor(shape, kFloat32, 9) * (random_tensor(shape, kFloat32, 10) > 0.5)).to(dt);
      EXPECT_CUDA_CLOSE(nonzero(x.cuda()), nonzero(x), {0, 0});
    }
  }
  // Over 1024 tiles of 256: the tile scan carries across its chunks; strided input.
  const Tensor big = random_tensor({600, 520}, kFloat32, 11) > 1.0;
  EXPECT_CUDA_CLOSE(nonzero(big.cuda()), nonzero(big), {0, 0});
  EXPECT_CUDA_CLOSE(nonzero(big.cuda().t()), nonzero(big.t()), {0, 0});
  EXPECT_EQ(nonzero(zeros({5, 4}).cuda()).shape(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(ones({5, 4}).cuda()).shape(), (Shape{20, 2}));
  EXPECT_EQ(nonzero(scalar_tensor(2.0).cuda()).shape(), (Shape{1, 0}));
}

TEST(CudaIndexingComposed, IndexAndIndexPutMatchTheCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({6, 5, 4}, kFloat32, 12);
  const Tensor i1 = random_index({3}, 5, 13), i2 = from_vector(std::vector<int64_t>{-1, 2}, {2, 1});
  const Tensor m = random_tensor({6, 5}, kFloat32, 14) > 0.0;
  const Tensor xc = x.cuda();
  EXPECT_CUDA_CLOSE(xc.index({Slice(1, None, 2), i1.cuda(), i2.cuda()}), x.index({Slice(1, None, 2), i1, i2}), {0, 0});
  EXPECT_CUDA_CLOSE(xc.index({i2.cuda(), Slice(), i1.cuda()}), x.index({i2, Slice(), i1}), {0, 0});
  EXPECT_CUDA_CLOSE(xc.index({m.cuda()}), x.index({m}), {0, 0});
  EXPECT_CUDA_CLOSE(xc.index({Ellipsis, 2, None}), x.index({Ellipsis, 2, None}), {0, 0});

  Tensor a = x.clone(), ac = x.cuda();
  a.index_put_({m}, 0);
  ac.index_put_({m.cuda()}, 0);
  EXPECT_CUDA_CLOSE(ac, a, {0, 0});
  const Tensor rep = random_index({50}, 6, 15), vals = random_tensor({50, 1, 4}, kFloat32, 16);
  a.index_put_({rep}, vals, /*accumulate=*/true);
  ac.index_put_({rep.cuda()}, vals.cuda(), true);
  EXPECT_CUDA_CLOSE(ac, a, {1e-5, 1e-5});
  const Tensor u = unique_columns(3, 1, 5, 17).reshape({3});
  Tensor b = x.clone(), bc = x.cuda();
  b.index_put_({Slice(), u, Slice(None, None, 2)}, random_tensor({3, 1}, kFloat32, 18));
  bc.index_put_({Slice(), u.cuda(), Slice(None, None, 2)}, random_tensor({3, 1}, kFloat32, 18).cuda());
  EXPECT_CUDA_CLOSE(bc, b, {0, 0});
}

TEST(CudaIndexingComposed, GradientsMatchTheCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({6, 5}, kFloat32, 19), v = random_tensor({4, 5}, kFloat32, 20);
  const Tensor idx = from_vector(std::vector<int64_t>{5, 0, 5, -2});
  const Tensor g = random_tensor({6, 5}, kFloat32, 21);
  auto grads = [&](const Tensor& xs, const Tensor& vs, const Tensor& is, const Tensor& gs) {
    Tensor a = xs.clone().requires_grad_(), b = vs.clone().requires_grad_();
    Tensor y = index_put(a * 1.0, {is}, b, true).index({Slice(), Slice(1, None)});
    (y * gs.index({Slice(), Slice(1, None)})).sum().backward();
    return std::make_pair(a.grad(), b.grad());
  };
  auto [ga, gb] = grads(x, v, idx, g);
  auto [gac, gbc] = grads(x.cuda(), v.cuda(), idx.cuda(), g.cuda());
  EXPECT_CUDA_CLOSE(gac, ga, {1e-5, 1e-5});
  EXPECT_CUDA_CLOSE(gbc, gb, {1e-5, 1e-5});
}

TEST(CudaIndexingComposed, MaskedOpsAndTakeAlongDimMatchTheCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({7, 9}, kFloat32, 22);
  const Tensor m = random_tensor({9}, kFloat32, 23) > 0.0;
  EXPECT_CUDA_CLOSE(masked_select(x.cuda(), m.cuda()), masked_select(x, m), {0, 0});
  const Tensor src = random_tensor({70}, kFloat32, 24);
  EXPECT_CUDA_CLOSE(masked_scatter(x.cuda(), m.cuda(), src.cuda()), masked_scatter(x, m, src), {0, 0});
  const Tensor idx = random_index({7, 4}, 9, 25);
  EXPECT_CUDA_CLOSE(take_along_dim(x.cuda(), idx.cuda(), 1), take_along_dim(x, idx, 1), {0, 0});
  const Tensor row = random_index({1, 3}, 9, 26);
  EXPECT_CUDA_CLOSE(x.cuda().take_along_dim(row.cuda(), -1), x.take_along_dim(row, -1), {0, 0});
}

TEST(CudaIndexingComposed, BadIndexTensorIsReportedFromTheDevice) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = zeros({4, 3}).cuda();
  const Tensor bad = from_vector(std::vector<int64_t>{0, 7}).cuda();
  EXPECT_THROW(x.index({bad}).cpu(), Error);
  Tensor y = zeros({4, 3}).cuda();
  EXPECT_THROW((y.index_put_({bad}, 1.0), y.cpu()), Error);
  EXPECT_NO_THROW(x.index({bad.clamp(0, 3)}).cpu());
}

}  // namespace
}  // namespace anvil
