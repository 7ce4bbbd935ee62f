// ZeroAdamW stage 2 (gradients sharded too): on 2 and 4 ranks, with gradient
// accumulation and global-norm clipping across the shards, the same
// parameters as AdamW on one process over the whole batch, with one bucket
// or many; after backward a rank holds ~1/N of the gradients.
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

// 5*8+8 + 8*3+3 = 75 parameters: no world size of 2 or 4 divides them.
std::shared_ptr<nn::Module> make_model() {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 8), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(8, 3));
  m->to(kFloat64);
  return m;
}
constexpr int64_t kNumel = 75;

constexpr int kSteps = 3, kAccumulation = 2;
constexpr int64_t kRows = 8;
constexpr double kMaxNorm = 0.3;
const nn::optim::AdamWOptions kAdamW{.lr = 0.05, .weight_decay = 0.1};

TEST(ZeroStage2, MatchesAdamWOnOneProcessWithAccumulationAndClipping) {
  // 64 bytes: one bucket per parameter (4 buckets); the default: one bucket.
  for (int64_t cap : {int64_t{64}, ZeroOptions{}.bucket_cap_bytes}) {
    for (int n : {2, 4}) {
      auto init = make_model();
      std::vector<Tensor> xs, ys;
      for (int i = 0; i < kSteps * kAccumulation; ++i) {
        xs.push_back(randn({kRows, 5}, kFloat64));
        ys.push_back(randn({kRows, 3}, kFloat64));
      }
      auto ref = make_model();
      ref->load_state_dict(init->state_dict());
      nn::optim::AdamW ref_opt(ref->parameters(), kAdamW);
      std::vector<double> ref_norms;
      for (int s = 0; s < kSteps; ++s) {
        ref_opt.zero_grad();
        for (int a = 0; a < kAccumulation; ++a)
          (mse_loss(ref->forward(xs[s * kAccumulation + a]), ys[s * kAccumulation + a]) / Scalar(double(kAccumulation)))
              .backward();
        ref_norms.push_back(nn::optim::clip_grad_norm_(ref->parameters(), kMaxNorm));
        ref_opt.step();
      }
      ASSERT_GT(ref_norms.front(), kMaxNorm) << "the test must exercise clipping";
      const std::vector<double> expected = flat_values(ref->parameters());

      std::vector<std::shared_ptr<nn::Module>> models;
      for (int r = 0; r < n; ++r) models.push_back(r == 0 ? init : make_model());
      std::vector<std::vector<double>> got(n), norms(n);
      std::vector<int64_t> grad_bytes_after_backward(n), state_bytes(n);
      std::vector<size_t> buckets(n), full_grads_left(n);
      run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
        const int r = group->rank();
        ZeroAdamW opt(models[r]->parameters(), group, kAdamW, {.stage = 2, .bucket_cap_bytes = cap});
        const int64_t per = kRows / n;
        for (int s = 0; s < kSteps; ++s) {
          opt.zero_grad();
          for (int a = 0; a < kAccumulation; ++a) {
            const int i = s * kAccumulation + a;
            (mse_loss(models[r]->forward(xs[i].narrow(0, r * per, per)), ys[i].narrow(0, r * per, per)) /
             Scalar(double(kAccumulation)))
                .backward();
          }
          grad_bytes_after_backward[r] = opt.gradient_bytes();
          for (const Tensor& p : models[r]->parameters()) full_grads_left[r] += p.grad().defined() ? 1 : 0;
          norms[r].push_back(opt.clip_grad_norm_(kMaxNorm));
          opt.step();
        }
        got[r] = flat_values(models[r]->parameters());
        state_bytes[r] = opt.optimizer_state_bytes();
        buckets[r] = opt.num_buckets();
      });
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE("bucket cap " + std::to_string(cap) + ", n=" + std::to_string(n) + ", rank " + std::to_string(r));
        EXPECT_LT(max_diff(got[r], expected), 1e-10);
        ASSERT_EQ(norms[r].size(), ref_norms.size());
        for (size_t s = 0; s < ref_norms.size(); ++s) EXPECT_NEAR(norms[r][s], ref_norms[s], 1e-10);
        EXPECT_EQ(buckets[r], cap == 64 ? 4u : 1u);
        EXPECT_EQ(full_grads_left[r], 0u) << "full gradients must be released during backward";
        // Gradients: this rank's slices only (each bucket padded to a multiple of n).
        const int64_t slice_bound = kNumel / n + static_cast<int64_t>(buckets[r]);
        EXPECT_LE(grad_bytes_after_backward[r], slice_bound * 8);
        EXPECT_GE(grad_bytes_after_backward[r], kNumel / n * 8);
        EXPECT_LE(state_bytes[r], 2 * slice_bound * 8);
        if (r == 0)
          std::printf(
              "ZeRO-2 n=%d, %zu bucket(s): gradients after backward %lld B, AdamW state %lld B per rank "
              "(unsharded: %lld B and %lld B)\n",
              n, buckets[r], static_cast<long long>(grad_bytes_after_backward[r]),
              static_cast<long long>(state_bytes[r]), static_cast<long long>(kNumel * 8),
              static_cast<long long>(2 * kNumel * 8));
      }
    }
  }
}

TEST(ZeroStage2, BadInputGivesClearErrors) {
  auto model = make_model();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    try {
      ZeroAdamW opt(model->parameters(), group, {}, {.stage = 3});
      ADD_FAILURE() << "stage 3 must be refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ZeroAdamW: stage must be 1 or 2, got 3"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("FullyShardedDataParallel"), std::string::npos) << e.what();
    }
    ZeroAdamW stage1(model->parameters(), group);
    try {
      stage1.clip_grad_norm_(1.0);
      ADD_FAILURE() << "clipping in stage 1 must be refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ZeroAdamW::clip_grad_norm_: needs stage 2"), std::string::npos) << e.what();
    }
    ZeroAdamW stage2(model->parameters(), group, {}, {.stage = 2});
    EXPECT_THROW(stage2.clip_grad_norm_(-1.0), Error);
    EXPECT_THROW(ZeroAdamW(model->parameters(), group, {}, {.stage = 2, .bucket_cap_bytes = 0}), Error);
  });
}

}  // namespace
}  // namespace anvil::distributed
