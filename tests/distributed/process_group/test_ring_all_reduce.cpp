// ring_all_reduce against the backend's all_reduce: 2, 3 and 4 ranks, sizes
// below, at and above the world size and not divisible by it, several chunk
// sizes (so chunks pipeline), float and integer dtypes, every ReduceOp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/process_group/ring_all_reduce.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using testing::run_ranks;

// Inputs for every rank, made on the main thread (rank threads do not share
// the global generator). Integers are cast from scaled normals.
std::vector<Tensor> rank_inputs(int n, int64_t numel, DType dtype) {
  std::vector<Tensor> xs;
  for (int r = 0; r < n; ++r) xs.push_back(randn({numel}, kFloat64).mul_(10.0).to(dtype));
  return xs;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

struct Case {
  int ranks;
  int64_t numel;
  DType dtype;
  ReduceOp op;
  int64_t chunk_bytes;
};

// Each rank reduces its input with the ring and with the backend; both
// results must agree (exactly for integers, Max and Min; float sums may add
// in another order).
void check(const Case& c) {
  SCOPED_TRACE("ranks=" + std::to_string(c.ranks) + " numel=" + std::to_string(c.numel) + " dtype=" +
               dtype_name(c.dtype) + " op=" + to_string(c.op) + " chunk_bytes=" + std::to_string(c.chunk_bytes));
  std::vector<Tensor> inputs = rank_inputs(c.ranks, c.numel, c.dtype);
  std::vector<Tensor> ring(c.ranks), reference(c.ranks);
  run_ranks(c.ranks, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    ring[r] = inputs[r].clone();
    reference[r] = inputs[r].clone();
    ring_all_reduce(*group, ring[r], c.op, {.chunk_bytes = c.chunk_bytes});
    group->all_reduce(reference[r], c.op)->wait();
  });
  const bool exact = !is_floating(c.dtype) || c.op == ReduceOp::Max || c.op == ReduceOp::Min;
  const double tol = exact ? 0.0 : (c.dtype == kFloat64 ? 1e-11 : 1e-4);
  for (int r = 0; r < c.ranks; ++r) {
    EXPECT_LE(max_abs_diff(ring[r], reference[r]), tol) << "rank " << r;
    EXPECT_EQ(max_abs_diff(ring[r], ring[0]), 0.0) << "rank " << r << " disagrees with rank 0";
  }
}

TEST(RingAllReduce, MatchesBackendSumOverRanksAndSizes) {
  for (int n : {2, 3, 4})
    for (int64_t numel : {1, 2, 3, 5, 7, 64, 1001, 30011}) check({n, numel, kFloat32, ReduceOp::Sum, 256 * 1024});
}

TEST(RingAllReduce, SmallChunksPipelineAndStayCorrect) {
  // 40-byte chunks: thousands of messages in flight per step.
  for (int n : {2, 3, 4})
    for (int64_t numel : {13, 999, 4099}) check({n, numel, kFloat64, ReduceOp::Sum, 40});
}

TEST(RingAllReduce, EveryOpAndDtype) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
    check({3, 517, kFloat32, op, 256});
    check({4, 3, kFloat64, op, 8});
  }
  for (DType dtype : {kInt32, kInt64})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) check({3, 1000, dtype, op, 100});
}

TEST(RingAllReduce, SumOfKnownValues) {
  // Rank r holds r + 1 everywhere: the sum is n(n+1)/2 in every element.
  for (int n : {2, 3, 4}) {
    std::vector<std::vector<float>> got(n);
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      Tensor x = full({10}, static_cast<double>(group->rank() + 1), TensorOptions().dtype(kFloat32));
      ring_all_reduce(*group, x, ReduceOp::Sum, {.chunk_bytes = 8});
      got[group->rank()] = x.to_vector<float>();
    });
    for (int r = 0; r < n; ++r)
      for (float v : got[r]) EXPECT_EQ(v, n * (n + 1) / 2.0f) << "n=" << n << " rank " << r;
  }
}

TEST(RingAllReduce, WorldSizeOneIsANoOp) {
  Tensor x = randn({17});
  Tensor before = x.clone();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) { ring_all_reduce(*group, x, ReduceOp::Avg); });
  EXPECT_EQ(max_abs_diff(x, before), 0.0);
}

TEST(RingAllReduce, RejectsNonContiguousTensors) {
  Tensor x = randn({4, 6}).t();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    try {
      ring_all_reduce(*group, x);
      ADD_FAILURE() << "expected an error for a non-contiguous tensor";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("contiguous"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace anvil::distributed
