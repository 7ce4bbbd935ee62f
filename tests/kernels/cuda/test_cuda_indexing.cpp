// index_select / index_add / gather / scatter_add (and embedding with its
// gradient) on CUDA against the CPU backend: contiguous row paths and strided
// paths, every dtype family, repeated indices, the deterministic mode, empty
// inputs, and out-of-range indices raising an anvil::Error.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/base/determinism.h"
#include "core/ops.h"
#include "kernels/runtime.h"
#include "kernels/cuda/index_errors.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;

Tensor random_index(const Shape& shape, int64_t size, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> d(0, size - 1);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return from_vector<int64_t>(v, {n}).reshape(shape);
}

// Sums of several values: accumulation order differs from the CPU. 16-bit
// sums round at every add (atomics, like the CPU's loop) or once
// (deterministic path): with ~35 adds per element of magnitude up to ~8 the
// two may drift apart by several units in the last place.
test::Tolerance sum_tol(DType d) {
  if (d == kFloat16) return {1e-2, 5e-2};
  if (d == kBFloat16) return {3e-2, 0.4};
  if (d == kFloat32) return {1e-5, 1e-5};
  return test::tolerance_for(d);
}

struct DeterministicGuard {
  explicit DeterministicGuard(bool on) : was(deterministic_algorithms_enabled()) { use_deterministic_algorithms(on); }
  ~DeterministicGuard() { use_deterministic_algorithms(was); }
  bool was;
};

TEST(CudaIndexing, IndexSelectAllDtypesAndLayouts) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    for (int64_t cols : {1, 3, 8, 768, 1001}) {
      const Tensor x = random_tensor({50, cols}, dt, cols);
      const Tensor idx = random_index({37}, 50, cols + 1);
      EXPECT_TRUE(all_close(index_select(x.cuda(), 0, idx.cuda()), index_select(x, 0, idx), {0, 0})) << dt;
      const Tensor idx1 = random_index({5}, cols, cols + 2);
      EXPECT_TRUE(all_close(index_select(x.cuda(), 1, idx1.cuda()), index_select(x, 1, idx1), {0, 0})) << dt;
    }
  }
  const Tensor x = random_tensor({6, 7, 8}, kFloat32, 3);
  const Tensor idx = random_index({11}, 7, 4);
  EXPECT_CUDA_CLOSE(index_select(x.cuda().transpose(0, 2), 1, idx.cuda()), index_select(x.transpose(0, 2), 1, idx),
                    {0, 0});
  EXPECT_CUDA_CLOSE(index_select(x.cuda(), 1, idx.cuda().slice(0, 0, 11, 2)),
                    index_select(x, 1, idx.slice(0, 0, 11, 2)), {0, 0});
  EXPECT_EQ(index_select(x.cuda(), 1, empty({0}, kInt64).cuda()).numel(), 0);
}

TEST(CudaIndexing, IndexAddAtomicAndDeterministic) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (bool deterministic : {false, true}) {
    DeterministicGuard guard(deterministic);
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8}) {
      for (int64_t cols : {1, 5, 256, 1000}) {
        const Tensor out = random_tensor({9, cols}, dt, cols);
        const Tensor src = random_tensor({300, cols}, dt, cols + 1);
        const Tensor idx = random_index({300}, 9, cols + 2);  // many repeats
        EXPECT_TRUE(
            all_close(index_add(out.cuda(), 0, idx.cuda(), src.cuda()), index_add(out, 0, idx, src), sum_tol(dt)))
            << dt << " cols " << cols << (deterministic ? " deterministic" : " atomic");
      }
    }
    // Not the first dim, strided source.
    const Tensor out = random_tensor({4, 6, 5}, kFloat32, 1);
    const Tensor src = random_tensor({5, 20, 4}, kFloat32, 2).permute({2, 1, 0});  // [4, 20, 5] strided
    const Tensor idx = random_index({20}, 6, 3);
    EXPECT_CUDA_CLOSE(index_add(out.cuda(), 1, idx.cuda(), src.cuda()), index_add(out, 1, idx, src), sum_tol(kFloat32));
  }
}

TEST(CudaIndexing, DeterministicIndexAddIsBitReproducible) {
  ANVIL_SKIP_WITHOUT_GPU();
  DeterministicGuard guard(true);
  const Tensor out = zeros({7, 64}).cuda();
  const Tensor src = random_tensor({5000, 64}, kFloat32, 4).cuda();
  const Tensor idx = random_index({5000}, 7, 5).cuda();
  const Tensor a = index_add(out, 0, idx, src), b = index_add(out, 0, idx, src);
  EXPECT_TRUE(all_close(a, b, {0, 0}));
}

TEST(CudaIndexing, GatherAndScatterAdd) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (bool deterministic : {false, true}) {
    DeterministicGuard guard(deterministic);
    for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt64}) {
      const Tensor x = random_tensor({8, 9, 10}, dt, 6);
      for (int64_t dim : {0, 1, 2}) {
        const Tensor idx = random_index({5, 6, 7}, x.shape()[dim], 7 + dim);
        EXPECT_TRUE(all_close(gather(x.cuda(), dim, idx.cuda()), gather(x, dim, idx), {0, 0})) << dt << " dim " << dim;
        const Tensor src = random_tensor({6, 7, 8}, dt, 8 + dim);
        EXPECT_TRUE(
            all_close(scatter_add(x.cuda(), dim, idx.cuda(), src.cuda()), scatter_add(x, dim, idx, src), sum_tol(dt)))
            << dt << " dim " << dim;
      }
    }
    // Along dims other than `dim` the index may not be larger than the input
    // (PyTorch's rule, which the CPU checks): a square x keeps both views valid.
    const Tensor x = random_tensor({12, 12}, kFloat32, 9);
    const Tensor idx = random_index({12, 10}, 12, 10).transpose(0, 1);  // strided index [10, 12]
    EXPECT_CUDA_CLOSE(gather(x.cuda().transpose(0, 1), 0, idx.cuda()), gather(x.transpose(0, 1), 0, idx), {0, 0});
    EXPECT_CUDA_CLOSE(scatter_add(x.cuda(), 1, idx.cuda(), x.cuda()), scatter_add(x, 1, idx, x), sum_tol(kFloat32));
  }
}

TEST(CudaIndexing, EmbeddingForwardAndBackward) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (bool deterministic : {false, true}) {
    DeterministicGuard guard(deterministic);
    const Tensor w = random_tensor({100, 48}, kFloat32, 11);
    const Tensor ids = random_index({4, 33}, 100, 12);
    const Tensor g = random_tensor({4, 33, 48}, kFloat32, 13);
    Tensor wc = w.clone().requires_grad_(), wg = w.cuda().requires_grad_();
    const Tensor yc = embedding(wc, ids), yg = embedding(wg, ids.cuda());
    EXPECT_CUDA_CLOSE(yg, yc, {0, 0});
    yc.backward(g);
    yg.backward(g.cuda());
    EXPECT_CUDA_CLOSE(wg.grad(), wc.grad(), sum_tol(kFloat32));
  }
}

TEST(CudaIndexing, OutOfRangeIndexRaises) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({5, 4}, kFloat32, 14).cuda();
  const Tensor bad = from_vector<int64_t>({0, 5, 1}, {3}).cuda();
  EXPECT_THROW(
      {
        index_select(x, 0, bad).cpu();
        cuda::raise_pending_index_error(0);
      },
      Error);
  const Tensor neg = from_vector<int64_t>({-1, 0, 0, 0}, {1, 4}).cuda();
  EXPECT_THROW(
      {
        gather(x, 0, neg).cpu();
        cuda::raise_pending_index_error(0);
      },
      Error);
  // The record was cleared by raising: good indices work again.
  EXPECT_NO_THROW(index_select(x, 0, from_vector<int64_t>({4, 0}, {2}).cuda()).cpu());
}

// The backend's synchronising points raise a pending bad index themselves:
// a blocking copy to the host and synchronize(), with no indexing call after.
TEST(CudaIndexing, BadIndexSurfacesAtSynchronisingPoints) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({5, 4}, kFloat32, 15).cuda();
  const Tensor bad = from_vector<int64_t>({0, 9}, {2}).cuda();
  EXPECT_THROW(index_select(x, 0, bad).cpu(), Error);
  Tensor y = index_select(x, 0, bad);
  EXPECT_THROW(runtime_for(DeviceType::CUDA).synchronize(0), Error);
  EXPECT_NO_THROW(runtime_for(DeviceType::CUDA).synchronize(0));  // raising cleared it
}

// The strided nn kernels share the backend's one offset calculator (12 dims),
// so ranks past 8 work as they do for elementwise ops.
TEST(CudaIndexing, GatherAndScatterAddBeyondEightDims) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Shape shape = {2, 1, 2, 3, 1, 2, 1, 2, 2, 5};
  const Tensor x = random_tensor(shape, kFloat32, 21);
  Shape index_shape = shape;
  index_shape[9] = 4;
  const Tensor idx = random_index(index_shape, 5, 22);
  EXPECT_CUDA_CLOSE(gather(x.cuda(), 9, idx.cuda()), gather(x, 9, idx), {0, 0});
  const Tensor src = random_tensor(index_shape, kFloat32, 23);
  EXPECT_CUDA_CLOSE(scatter_add(x.cuda(), 9, idx.cuda(), src.cuda()), scatter_add(x, 9, idx, src), {1e-6, 1e-6});
}

}  // namespace
}  // namespace anvil
