#pragma once
// Shared by the comm-hook tests: an MLP, per-rank random batches, and a run
// that records, per rank and step, the rank's own gradients (a no_sync
// backward) and what DDP with a hook made of them (a synced backward).
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "core/ops.h"
#include "distributed/ddp/ddp.h"
#include "nn/layers/layers.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed::hook_tests {

using Grads = std::vector<double>;  // every parameter's gradient, flat, in parameters() order

// Weights of 24x40 and 16x24 (compressible at low rank), biases 1-D.
inline std::shared_ptr<nn::Module> make_mlp(DType dtype) {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(40, 24), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(24, 16));
  m->to(dtype);
  return m;
}

inline int64_t parameter_count(nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}

inline Grads flat_grads(nn::Module& m) {
  Grads out;
  for (const Tensor& p : m.parameters()) {
    auto v = p.grad().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

struct Batches {
  std::vector<std::vector<Tensor>> x, y;  // [rank][step], made on the main thread
};
inline Batches random_batches(int ranks, int steps, DType dtype) {
  Batches b;
  b.x.resize(ranks);
  b.y.resize(ranks);
  for (int r = 0; r < ranks; ++r)
    for (int s = 0; s < steps; ++s) {
      b.x[r].push_back(randn({6, 40}, dtype));
      b.y[r].push_back(randn({6, 16}, dtype));
    }
  return b;
}

struct HookRun {
  std::vector<std::vector<Grads>> local, reduced;  // [rank][step]
  std::vector<std::vector<int64_t>> bytes;  // [rank][step]: comm_stats().last_step_bytes
  std::vector<std::vector<int64_t>> collectives;  // [rank][step]
  std::vector<size_t> buckets;  // [rank]
  int64_t params = 0;
};

// Parameters stay fixed (no optimizer), so every step's gradients are at the
// same point and only the data differs.
inline HookRun run_with_hook(int ranks, int steps, DType dtype, const DDPOptions& options,
                             const std::function<void(DistributedDataParallel&)>& register_hook) {
  Batches data = random_batches(ranks, steps, dtype);
  std::vector<std::shared_ptr<nn::Module>> models;
  for (int r = 0; r < ranks; ++r) models.push_back(make_mlp(dtype));
  HookRun run;
  run.local.resize(ranks);
  run.reduced.resize(ranks);
  run.bytes.resize(ranks);
  run.collectives.resize(ranks);
  run.buckets.resize(ranks);
  run.params = parameter_count(*models[0]);
  testing::run_ranks(ranks, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    auto ddp = std::make_shared<DistributedDataParallel>(models[r], group, options);
    if (register_hook) register_hook(*ddp);
    run.buckets[r] = ddp->bucket_parameter_names().size();
    for (int s = 0; s < steps; ++s) {
      ddp->zero_grad();
      {
        auto guard = ddp->no_sync();
        mse_loss(ddp->forward(data.x[r][s]), data.y[r][s]).backward();
      }
      run.local[r].push_back(flat_grads(*ddp));
      ddp->zero_grad();
      mse_loss(ddp->forward(data.x[r][s]), data.y[r][s]).backward();
      run.reduced[r].push_back(flat_grads(*ddp));
      run.bytes[r].push_back(ddp->comm_stats().last_step_bytes);
      run.collectives[r].push_back(ddp->comm_stats().last_step_collectives);
    }
  });
  return run;
}

// The exact average over ranks of step s's local gradients.
inline Grads true_average(const HookRun& run, int s) {
  const size_t ranks = run.local.size();
  Grads avg(run.local[0][s].size(), 0.0);
  for (size_t r = 0; r < ranks; ++r)
    for (size_t i = 0; i < avg.size(); ++i) avg[i] += run.local[r][s][i] / static_cast<double>(ranks);
  return avg;
}

inline double max_abs_diff(const Grads& a, const Grads& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return a.size() == b.size() ? m : INFINITY;
}

}  // namespace anvil::distributed::hook_tests
