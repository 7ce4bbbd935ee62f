#include "distributed/comm_hooks/powersgd.h"

#include <algorithm>
#include <random>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"

namespace anvil::distributed {

namespace {

// One compressed gradient: a view of the bucket buffer as n x m, and where
// its P and Q factors sit in their flat buffers.
struct LowRankMatrix {
  Tensor m;
  int64_t rows = 0, cols = 0, rank = 0;
  int64_t p_offset = 0, q_offset = 0;
};

struct BucketPlan {
  std::vector<size_t> uncompressed;  // parameter indices, sent whole
  std::vector<LowRankMatrix> matrices;
  int64_t uncompressed_numel = 0, p_numel = 0, q_numel = 0;
};

BucketPlan plan_bucket(const GradBucket& bucket, const PowerSGDOptions& o) {
  BucketPlan plan;
  for (size_t i = 0; i < bucket.parameters().size(); ++i) {
    Tensor g = bucket.gradient(i);
    const int64_t n = g.dim() >= 2 ? g.size(0) : 0;
    const int64_t m = n > 0 ? g.numel() / n : 0;
    const int64_t r = std::min({n, m, o.matrix_approximation_rank});
    const bool pays = r > 0 && static_cast<double>(n) * static_cast<double>(m) >
                                   o.min_compression_rate * static_cast<double>(r * (n + m));
    if (!pays) {
      plan.uncompressed.push_back(i);
      plan.uncompressed_numel += g.numel();
      continue;
    }
    plan.matrices.push_back({g.view({n, m}), n, m, r, plan.p_numel, plan.q_numel});
    plan.p_numel += n * r;
    plan.q_numel += m * r;
  }
  return plan;
}

Tensor factor(const Tensor& flat, int64_t offset, int64_t rows, int64_t rank) {
  return flat.narrow(0, offset, rows * rank).view({rows, rank});
}

// Orthonormalizes the columns of a (rows x r) matrix in place: Gram-Schmidt,
// each column projected against the ones before it twice ("twice is
// enough": one pass loses orthogonality when P is ill-conditioned). A column
// left with almost none of its norm lies in the span of the earlier ones --
// the usual case at high rank, since a gradient over a small batch has low
// rank -- and becomes zero instead of normalized rounding noise, which would
// break P P^T being a projection. r is small, so these small tensor ops beat
// a QR factorization (and run on any device without reading back).
void orthogonalize(Tensor a, double epsilon) {
  const int64_t r = a.size(1);
  const double keep_above = 1000 * (a.dtype() == kFloat64 ? 2.2e-16 : 1.2e-7);
  for (int64_t i = 0; i < r; ++i) {
    Tensor col = a.narrow(1, i, 1);
    Tensor norm_before = linalg::vector_norm(col);
    if (i > 0) {
      Tensor done = a.narrow(1, 0, i);
      for (int pass = 0; pass < 2; ++pass) col.sub_(mm(done, mm(done.t(), col)));
    }
    Tensor norm = linalg::vector_norm(col);
    Tensor keep = gt(norm, norm_before * keep_above).to(a.dtype());
    col.mul_(keep / norm.add(Scalar(epsilon)).clamp_min(1e-30));
  }
}

// Every rank draws the same Q: a host generator seeded from the options, the
// bucket and the step (never the global generator, which ranks advance differently).
Tensor random_q(const BucketPlan& plan, const PowerSGDOptions& o, size_t bucket_index, int64_t iteration,
                const TensorOptions& options) {
  std::seed_seq seq{static_cast<uint64_t>(o.random_seed), static_cast<uint64_t>(bucket_index),
                    static_cast<uint64_t>(o.warm_start ? 0 : iteration)};
  std::mt19937_64 rng(seq);
  std::normal_distribution<double> normal;
  std::vector<double> values(static_cast<size_t>(plan.q_numel));
  for (double& v : values) v = normal(rng);
  Tensor q = from_vector(values, {plan.q_numel}).to(options);
  for (const LowRankMatrix& mat : plan.matrices)
    orthogonalize(factor(q, mat.q_offset, mat.cols, mat.rank), o.orthogonalization_epsilon);
  return q;
}

}  // namespace

PowerSGDState::PowerSGDState(PowerSGDOptions options) : options_(options) {
  ANVIL_CHECK(options_.matrix_approximation_rank >= 1, "PowerSGDState: matrix_approximation_rank must be >= 1, got ",
              options_.matrix_approximation_rank);
  ANVIL_CHECK(options_.start_powerSGD_iter >= 0, "PowerSGDState: start_powerSGD_iter must be >= 0, got ",
              options_.start_powerSGD_iter);
  ANVIL_CHECK(options_.min_compression_rate >= 0, "PowerSGDState: min_compression_rate must be >= 0, got ",
              options_.min_compression_rate);
}

Tensor PowerSGDState::error(size_t bucket_index) const {
  auto it = memory_.find(bucket_index);
  return it == memory_.end() ? Tensor() : it->second.error;
}

int64_t PowerSGDState::compressed_numel(const GradBucket& bucket, const PowerSGDOptions& options) {
  BucketPlan plan = plan_bucket(bucket, options);
  return plan.uncompressed_numel + plan.p_numel + plan.q_numel;
}

BucketFutureHandle powersgd_hook(PowerSGDState& state, GradBucket& bucket) {
  const PowerSGDOptions& o = state.options_;
  const int64_t iteration = state.iteration_;
  if (bucket.is_last()) ++state.iteration_;  // every bucket of this step has decided by now
  if (iteration < o.start_powerSGD_iter) return allreduce_hook(bucket);

  NoGradGuard no_grad;
  Tensor input = bucket.buffer();
  PowerSGDState::BucketMemory& memory = state.memory_[bucket.index()];
  Tensor input_before;  // this rank's gradient plus residual, to measure what is left out
  if (o.use_error_feedback) {
    if (memory.error.defined() && memory.error.numel() == input.numel())
      input.add_(memory.error);
    else
      memory.error = zeros_like(input);
    input_before = input.clone();
  }
  BucketPlan plan = plan_bucket(bucket, o);
  if (!o.warm_start || !memory.q.defined() || memory.q.numel() != plan.q_numel)
    memory.q = random_q(plan, o, bucket.index(), iteration, input.options());

  // The uncompressed tensors and every P travel in one all-reduce.
  Tensor first = empty({plan.uncompressed_numel + plan.p_numel}, input.options());
  int64_t at = 0;
  for (size_t i : plan.uncompressed) {
    Tensor g = bucket.gradient(i);
    first.narrow(0, at, g.numel()).copy_(g.reshape({g.numel()}));
    at += g.numel();
  }
  for (const LowRankMatrix& mat : plan.matrices)
    factor(first, at + mat.p_offset, mat.rows, mat.rank)
        .copy_(mm(mat.m, factor(memory.q, mat.q_offset, mat.cols, mat.rank)));
  WorkHandle work = bucket.process_group().all_reduce(first, ReduceOp::Sum);

  const size_t index = bucket.index();
  return BucketFuture::after(std::move(work), [&state, &bucket, plan, first, input, input_before, index]() mutable {
    const PowerSGDOptions& opts = state.options_;
    PowerSGDState::BucketMemory& mem = state.memory_[index];
    const Scalar world(static_cast<int64_t>(bucket.world_size()));
    int64_t pos = 0;
    for (size_t i : plan.uncompressed) {
      Tensor g = bucket.gradient(i);
      g.copy_(first.narrow(0, pos, g.numel()).view(g.shape())).div_(world);
      pos += g.numel();
    }
    if (!plan.matrices.empty()) {
      // Every Q from the local M before any M is overwritten by its approximation.
      for (const LowRankMatrix& mat : plan.matrices) {
        Tensor p = factor(first, pos + mat.p_offset, mat.rows, mat.rank);
        orthogonalize(p, opts.orthogonalization_epsilon);
        factor(mem.q, mat.q_offset, mat.cols, mat.rank).copy_(mm(mat.m.t(), p));
      }
      bucket.process_group().all_reduce(mem.q, ReduceOp::Sum)->wait();
      mem.q.div_(world);
      for (LowRankMatrix& mat : plan.matrices)
        mat.m.copy_(mm(factor(first, pos + mat.p_offset, mat.rows, mat.rank),
                       factor(mem.q, mat.q_offset, mat.cols, mat.rank).t()));
    }
    if (opts.use_error_feedback) mem.error = input_before.sub_(input);
    if (!opts.warm_start) mem.q = Tensor();
    return input;
  });
}

}  // namespace anvil::distributed
