#pragma once
// The DDP and ZeRO checks that two workers run: data_parallel.cpp on CPU
// tensors (Gloo) and nccl.cpp on CUDA tensors (NCCL, emulated in CI). N ranks
// training a small float64 MLP, each on its slice of every batch, must end
// with the parameters one process reaches on the whole batches. Every rank
// seeds the generator alike, so each computes that reference itself.
//
// The bound 1e-10: each rank's gradient is a mean over its slice, averaged
// across ranks, the same sum in another order, so float64 rounding (seen:
// 2.2e-12 after four steps, Adam's normalisation amplifying it) is expected;
// a wrong shard or step is orders of magnitude larger.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/ops.h"
#include "distributed/ddp/ddp.h"
#include "distributed/zero/zero.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"

namespace anvil::test::worker {

inline constexpr double kOneProcessTolerance = 1e-10;
// Rows per step; every rank count the tests use (2, 3, 4) divides it.
inline constexpr int64_t kMlpBatch = 12;

// 6*9+9 + 9*4+4 = 103 parameters: a prime, so no shard split is even.
inline std::shared_ptr<nn::Module> small_mlp(const Device& device) {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 9), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(9, 4));
  m->to(kFloat64);
  m->to(device);
  return m;
}

// `steps` batches of (input, target) for small_mlp, on `device`.
inline std::pair<std::vector<Tensor>, std::vector<Tensor>> random_mlp_steps(const Device& device, int steps) {
  std::vector<Tensor> xs, ys;
  for (int s = 0; s < steps; ++s) {
    xs.push_back(randn({kMlpBatch, 6}, kFloat64).to(device));
    ys.push_back(randn({kMlpBatch, 4}, kFloat64).to(device));
  }
  return {xs, ys};
}

inline double max_parameter_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, (a[i].detach() - b[i].detach()).abs().max().item<double>());
  return m;
}

// One process's AdamW on whole batches; returns that model.
inline std::shared_ptr<nn::Module> one_process_adamw(const std::shared_ptr<nn::Module>& start,
                                                     const std::vector<Tensor>& xs, const std::vector<Tensor>& ys,
                                                     const nn::optim::AdamWOptions& options, const Device& device) {
  auto ref = small_mlp(device);
  ref->load_state_dict(start->state_dict());
  nn::optim::AdamW opt(ref->parameters(), options);
  for (size_t s = 0; s < xs.size(); ++s) {
    opt.zero_grad();
    mse_loss(ref->forward(xs[s]), ys[s]).backward();
    opt.step();
  }
  return ref;
}

// DDP (small buckets, so several) against one process; throws naming the error.
inline void check_ddp_matches_one_process(const std::shared_ptr<distributed::ProcessGroup>& g, const Device& device,
                                          int steps) {
  const int n = g->size(), r = g->rank();
  auto model = small_mlp(device);
  const auto [xs, ys] = random_mlp_steps(device, steps);
  auto ref = one_process_adamw(model, xs, ys, {.lr = 0.01}, device);
  auto wrapped = std::make_shared<distributed::DistributedDataParallel>(
      model, g, distributed::DDPOptions{.bucket_cap_bytes = 256});
  nn::optim::AdamW opt(wrapped->parameters(), {.lr = 0.01});
  const int64_t per = kMlpBatch / n;
  for (size_t s = 0; s < xs.size(); ++s) {
    opt.zero_grad();
    mse_loss(wrapped->forward(xs[s].narrow(0, r * per, per)), ys[s].narrow(0, r * per, per)).backward();
    opt.step();
  }
  for (const Tensor& p : model->parameters())
    if (p.device() != device) throw std::runtime_error("a DDP parameter left " + device.str());
  const double err = max_parameter_diff(model->parameters(), ref->parameters());
  if (!(err < kOneProcessTolerance))
    throw std::runtime_error("DDP on " + device.str() + ": parameters differ from one process by " +
                             std::to_string(err));
}

struct ZeroRun {
  int64_t optimizer_state_bytes = 0, shard_size = 0;
};

// ZeroAdamW (the given stage) against one process's AdamW; throws naming the error.
inline ZeroRun check_zero_matches_adamw(const std::shared_ptr<distributed::ProcessGroup>& g, const Device& device,
                                        int steps, distributed::ZeroOptions zero) {
  const int n = g->size(), r = g->rank();
  const nn::optim::AdamWOptions options{.lr = 0.01, .weight_decay = 0.05};
  auto model = small_mlp(device);
  const auto [xs, ys] = random_mlp_steps(device, steps);
  auto ref = one_process_adamw(model, xs, ys, options, device);
  distributed::ZeroAdamW opt(model->parameters(), g, options, zero);
  const int64_t per = kMlpBatch / n;
  for (size_t s = 0; s < xs.size(); ++s) {
    opt.zero_grad();
    mse_loss(model->forward(xs[s].narrow(0, r * per, per)), ys[s].narrow(0, r * per, per)).backward();
    opt.step();
  }
  const double err = max_parameter_diff(model->parameters(), ref->parameters());
  if (!(err < kOneProcessTolerance))
    throw std::runtime_error("ZeRO-" + std::to_string(zero.stage) + " on " + device.str() +
                             ": parameters differ from AdamW by " + std::to_string(err));
  return {opt.optimizer_state_bytes(), opt.shard_size()};
}

}  // namespace anvil::test::worker
