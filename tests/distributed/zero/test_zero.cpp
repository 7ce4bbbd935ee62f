// ZeroAdamW (ZeRO-1): the same parameters as unsharded AdamW on the whole
// batch, on 2 and 3 ranks with a parameter count no world size divides;
// optimizer state per rank ~ 1/N of AdamW's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/zero/zero.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"
#include "tests/distributed/rank_threads.h"
#include "tests/distributed/zero/flat_compare.h"

namespace anvil::distributed {
namespace {

using testing::flat_values;
using testing::max_diff;
using testing::run_ranks;

// 4*3+3 + 3*2+2 = 23 parameters: prime, so every rank count needs padding.
std::shared_ptr<nn::Module> make_model() {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(3, 2));
  m->to(kFloat64);
  return m;
}

TEST(ZeroAdamW, MatchesUnshardedAdamWOnTheWholeBatch) {
  const int steps = 5;
  const int64_t batch = 6;
  const nn::optim::AdamWOptions options{.lr = 0.05, .weight_decay = 0.1};
  for (int n : {2, 3}) {
    auto init = make_model();
    std::vector<Tensor> xs, ys;
    for (int s = 0; s < steps; ++s) {
      xs.push_back(randn({batch, 4}, kFloat64));
      ys.push_back(randn({batch, 2}, kFloat64));
    }
    // Reference: one process, AdamW, whole batches.
    auto ref = make_model();
    ref->load_state_dict(init->state_dict());
    nn::optim::AdamW ref_opt(ref->parameters(), options);
    for (int s = 0; s < steps; ++s) {
      ref_opt.zero_grad();
      mse_loss(ref->forward(xs[s]), ys[s]).backward();
      ref_opt.step();
    }
    const std::vector<double> expected = flat_values(ref->parameters());
    int64_t unsharded_state = 0;
    for (const Tensor& p : ref->parameters())
      for (const auto& [name, t] : ref_opt.state_of(p)->buffers) unsharded_state += static_cast<int64_t>(t.nbytes());

    std::vector<std::shared_ptr<nn::Module>> models;
    for (int r = 0; r < n; ++r) models.push_back(r == 0 ? init : make_model());  // others are overwritten
    std::vector<std::vector<double>> got(n);
    std::vector<int64_t> state_bytes(n), unsharded_reported(n), shard_sizes(n);
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      ZeroAdamW opt(models[r]->parameters(), group, options);
      const int64_t per = batch / n;
      for (int s = 0; s < steps; ++s) {
        opt.zero_grad();
        mse_loss(models[r]->forward(xs[s].narrow(0, r * per, per)), ys[s].narrow(0, r * per, per)).backward();
        opt.step();
      }
      got[r] = flat_values(models[r]->parameters());
      state_bytes[r] = opt.optimizer_state_bytes();
      unsharded_reported[r] = opt.unsharded_optimizer_state_bytes();
      shard_sizes[r] = opt.shard_size();
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_LT(max_diff(got[r], expected), 1e-12) << "n=" << n << " rank " << r;
      EXPECT_EQ(unsharded_reported[r], unsharded_state);
      EXPECT_EQ(shard_sizes[r], (23 + n - 1) / n);
      EXPECT_EQ(state_bytes[r], 2 * shard_sizes[r] * 8);
      // ~1/N of AdamW's state (the padding adds at most one element per rank).
      EXPECT_LE(state_bytes[r], unsharded_state / n + 2 * 8);
      std::printf("ZeroAdamW n=%d rank %d: optimizer state %lld bytes (unsharded AdamW: %lld)\n", n, r,
                  static_cast<long long>(state_bytes[r]), static_cast<long long>(unsharded_state));
    }
  }
}

TEST(ZeroAdamW, FollowsTheLearningRateSetOnIt) {
  // lr 0 leaves the parameters unchanged: the wrapper's lr (what schedulers set) must reach the shard.
  auto model = make_model();
  const std::vector<double> before = flat_values(model->parameters());
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    ZeroAdamW opt(model->parameters(), group, {.lr = 0.1, .weight_decay = 0.0});
    opt.set_lr(0.0);
    mse_loss(model->forward(randn({2, 4}, kFloat64)), zeros({2, 2}, TensorOptions().dtype(kFloat64))).backward();
    opt.step();
  });
  EXPECT_EQ(max_diff(flat_values(model->parameters()), before), 0.0);
}

TEST(ZeroAdamW, RejectsMixedDtypes) {
  Tensor a = zeros({3}).requires_grad_();
  Tensor b = zeros({3}, TensorOptions().dtype(kFloat64)).requires_grad_();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) { EXPECT_THROW(ZeroAdamW({a, b}, group), Error); });
}

}  // namespace
}  // namespace anvil::distributed
