// DDP comm hooks: the default all-reduce, fp16/bf16 compression (results
// within the 16-bit rounding bound of the true average, half the bytes), a
// user-written hook (called once per bucket per step, in bucket order), the
// first bucket's size limit, and registration errors.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/comm_hooks/compress_hooks.h"
#include "tests/distributed/comm_hooks/ddp_grads.h"

namespace anvil::distributed {
namespace {

using namespace hook_tests;

constexpr int kSteps = 2;

// fl(x / n) per rank (the division in float32, one rounding to 16 bits),
// then n - 1 additions each rounded to 16 bits (Gloo adds in float and rounds
// after every step), then an exact cast back: the error of each element is
// at most (n + 1) u sum_i |x_i| / n (to first order; the bound below allows
// one more u), u the unit roundoff, plus the absolute rounding of numbers
// below the normal range.
void check_within_rounding(const HookRun& run, double unit_roundoff, double subnormal_step, const char* what) {
  const int ranks = static_cast<int>(run.local.size());
  double largest_relative_error = 0;
  for (int s = 0; s < kSteps; ++s) {
    const Grads avg = true_average(run, s);
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(run.reduced[r][s].size(), avg.size());
      for (size_t i = 0; i < avg.size(); ++i) {
        double mean_abs = 0;
        for (int q = 0; q < ranks; ++q) mean_abs += std::abs(run.local[q][s][i]) / ranks;
        const double bound = (ranks + 2) * unit_roundoff * mean_abs + ranks * subnormal_step;
        const double error = std::abs(run.reduced[r][s][i] - avg[i]);
        ASSERT_LE(error, bound) << what << " ranks=" << ranks << " rank " << r << " step " << s << " element " << i;
        if (mean_abs > 1e-3) largest_relative_error = std::max(largest_relative_error, error / mean_abs);
      }
      EXPECT_EQ(run.reduced[r][s], run.reduced[0][s]) << what << ": the ranks disagree";
    }
  }
  // The gradients really went through 16 bits: float32 would round 2^13
  // (fp16) or 2^16 (bf16) times less.
  EXPECT_GT(largest_relative_error, unit_roundoff / 4) << what;
}

TEST(DDPCommHooks, Fp16AndBf16MatchTheAverageWithinTheirRoundingAndHalveTheBytes) {
  for (int ranks : {2, 4}) {
    const DDPOptions options{.bucket_cap_bytes = 1024};  // four buckets
    HookRun fp16 = run_with_hook(ranks, kSteps, kFloat32, options,
                                 [](DistributedDataParallel& ddp) { ddp.register_comm_hook(fp16_compress_hook); });
    check_within_rounding(fp16, std::ldexp(1.0, -11), std::ldexp(1.0, -25), "fp16");
    HookRun bf16 = run_with_hook(ranks, kSteps, kFloat32, options,
                                 [](DistributedDataParallel& ddp) { ddp.register_comm_hook(bf16_compress_hook); });
    check_within_rounding(bf16, std::ldexp(1.0, -8), 0.0, "bf16");
    HookRun full = run_with_hook(ranks, kSteps, kFloat32, options, nullptr);
    for (int r = 0; r < ranks; ++r)
      for (int s = 0; s < kSteps; ++s) {
        EXPECT_EQ(full.bytes[r][s], 4 * full.params);
        EXPECT_EQ(fp16.bytes[r][s], 2 * fp16.params);
        EXPECT_EQ(bf16.bytes[r][s], 2 * bf16.params);
        EXPECT_EQ(full.collectives[r][s], static_cast<int64_t>(full.buckets[r]));
        EXPECT_LT(max_abs_diff(full.reduced[r][s], true_average(full, s)), 1e-6);
      }
    EXPECT_EQ(full.buckets[0], 4u);
  }
}

struct HookCall {
  size_t index;
  bool is_last;
  std::vector<std::string> names;
};

// A user hook: averages through all_gather instead of all_reduce, and
// records what it was called with.
TEST(DDPCommHooks, UserHookIsCalledOncePerBucketPerStepInOrder) {
  const int ranks = 2;
  std::vector<std::vector<HookCall>> calls(ranks);
  std::vector<std::vector<std::vector<std::string>>> layout(ranks);
  const DDPOptions options{.bucket_cap_bytes = 1024};
  HookRun run = run_with_hook(ranks, kSteps, kFloat64, options, [&](DistributedDataParallel& ddp) {
    const int r = ddp.process_group().rank();
    layout[r] = ddp.bucket_parameter_names();
    ddp.register_comm_hook([&calls, r](GradBucket& bucket) {
      calls[r].push_back({bucket.index(), bucket.is_last(), bucket.parameter_names()});
      const int n = bucket.world_size();
      Tensor flat = bucket.buffer();
      Tensor gathered = empty({n * flat.numel()}, flat.options());
      WorkHandle work = bucket.process_group().all_gather(gathered, flat);
      return BucketFuture::after(work, [flat, gathered, n]() mutable {
        return flat.copy_(gathered.view({n, flat.numel()}).sum(0)).div_(Scalar(static_cast<int64_t>(n)));
      });
    });
  });
  for (int r = 0; r < ranks; ++r) {
    const size_t buckets = layout[r].size();
    ASSERT_GT(buckets, 1u);
    ASSERT_EQ(calls[r].size(), kSteps * buckets) << "rank " << r;
    for (size_t c = 0; c < calls[r].size(); ++c) {
      const size_t expected_index = c % buckets;
      EXPECT_EQ(calls[r][c].index, expected_index);
      EXPECT_EQ(calls[r][c].is_last, expected_index + 1 == buckets);
      EXPECT_EQ(calls[r][c].names, layout[r][expected_index]);
    }
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_LT(max_abs_diff(run.reduced[r][s], true_average(run, s)), 1e-12) << "rank " << r << " step " << s;
      // all_gather hands over this rank's buffer: its bytes are counted.
      EXPECT_EQ(run.bytes[r][s], 8 * run.params);
    }
  }
}

// A hook returning the wrong size fails the step on every rank with a clear
// error; the next step (here the hook behaves) runs normally.
TEST(DDPCommHooks, HookResultOfTheWrongSizeIsAnErrorAndTheNextStepRecovers) {
  const int ranks = 2;
  std::vector<std::string> messages(ranks);
  std::vector<int64_t> steps_done(ranks);
  auto models = std::vector<std::shared_ptr<nn::Module>>{make_mlp(kFloat32), make_mlp(kFloat32)};
  Batches data = random_batches(ranks, 2, kFloat32);
  testing::run_ranks(ranks, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    DistributedDataParallel ddp(models[r], group, {.bucket_cap_bytes = 1024});
    auto calls = std::make_shared<int>(0);
    ddp.register_comm_hook([calls](GradBucket& bucket) {
      if ((*calls)++ == 0) return BucketFuture::ready(bucket.buffer().narrow(0, 0, 1));
      return allreduce_hook(bucket);
    });
    try {
      mse_loss(ddp.forward(data.x[r][0]), data.y[r][0]).backward();
    } catch (const Error& e) {
      messages[r] = e.what();
    }
    ddp.zero_grad();
    mse_loss(ddp.forward(data.x[r][1]), data.y[r][1]).backward();
    steps_done[r] = ddp.comm_stats().steps;
  });
  for (const std::string& m : messages) EXPECT_NE(m.find("comm hook's result for bucket 0"), std::string::npos) << m;
  for (int64_t s : steps_done) EXPECT_EQ(s, 1);
}

TEST(DDPCommHooks, RegisteringTwiceOrAfterTrainingStartedIsAnError) {
  Batches data = random_batches(2, 1, kFloat32);
  auto models = std::vector<std::shared_ptr<nn::Module>>{make_mlp(kFloat32), make_mlp(kFloat32)};
  testing::run_ranks(2, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    DistributedDataParallel ddp(models[r], group);
    ddp.register_comm_hook(fp16_compress_hook);
    EXPECT_THROW(ddp.register_comm_hook(bf16_compress_hook), Error);
    mse_loss(ddp.forward(data.x[r][0]), data.y[r][0]).backward();
    DistributedDataParallel late(make_mlp(kFloat32), group);
    mse_loss(late.forward(data.x[r][0]), data.y[r][0]).backward();
    try {
      late.register_comm_hook(fp16_compress_hook);
      ADD_FAILURE() << "registering after a step must fail";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("before the first forward/backward"), std::string::npos) << e.what();
    }
  });
}

// float32 sizes, in bucket order: 2.bias 64 B, 2.weight 1536 B, 0.bias 96 B, 0.weight 3840 B.
TEST(DDPCommHooks, FirstBucketCapIsRespectedAndValidated) {
  testing::run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    DistributedDataParallel small_first(make_mlp(kFloat32), group,
                                        {.bucket_cap_bytes = 8192, .first_bucket_cap_bytes = 100});
    EXPECT_EQ(small_first.bucket_parameter_names(),
              (std::vector<std::vector<std::string>>{{"2.bias"}, {"2.weight", "0.bias", "0.weight"}}));
    DistributedDataParallel larger_first(make_mlp(kFloat32), group,
                                         {.bucket_cap_bytes = 1700, .first_bucket_cap_bytes = 1600});
    EXPECT_EQ(larger_first.bucket_parameter_names(),
              (std::vector<std::vector<std::string>>{{"2.bias", "2.weight"}, {"0.bias"}, {"0.weight"}}));
    // The default first cap (1 MiB) is clamped to a smaller bucket cap.
    DistributedDataParallel clamped(make_mlp(kFloat32), group, {.bucket_cap_bytes = 100});
    EXPECT_EQ(clamped.bucket_parameter_names().front(), std::vector<std::string>{"2.bias"});
    try {
      DistributedDataParallel bad(make_mlp(kFloat32), group, {.first_bucket_cap_bytes = 0});
      ADD_FAILURE() << "first_bucket_cap_bytes = 0 must be rejected";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("first_bucket_cap_bytes must be positive, got 0"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace anvil::distributed
