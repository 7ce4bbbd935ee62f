// Synchronous parameter-server training gives what one process gets on the
// whole batch (as DDP does): N workers on N shards, the PS ranks averaging
// and stepping SGD with momentum or AdamW; and the shard plan itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/base/error.h"
#include "tests/distributed/parameter_server/ps_test_util.h"

namespace anvil::distributed::ps {
namespace {

using namespace testing;

constexpr int64_t kBatch = 12;  // divisible by 2, 3 and 4 workers

Tensor shard_rows(const Tensor& t, int w, int n) {
  const int64_t per = t.size(0) / n;
  return t.narrow(0, w * per, per);
}

void check_sync_matches_one_process(int num_ps, int num_workers, const OptimizerFactory& make_opt, uint64_t seed) {
  SCOPED_TRACE("ps=" + std::to_string(num_ps) + " workers=" + std::to_string(num_workers) +
               " seed=" + std::to_string(seed));
  const int steps = 5;
  manual_seed(seed);
  std::vector<Tensor> xs, ys;
  for (int s = 0; s < steps; ++s) {
    xs.push_back(randn({kBatch, 5}));
    ys.push_back(randn({kBatch, 3}));
  }
  // One process, whole batch.
  auto ref = make_mlp(seed + 1);
  auto opt = make_opt(ref->parameters());
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    mse_loss(ref->forward(xs[s]), ys[s]).backward();
    opt->step();
  }

  auto init = make_mlp(seed + 1);
  Job job(init->parameters(), num_ps, {.mode = Mode::Sync, .num_workers = num_workers, .make_optimizer = make_opt});
  std::vector<std::vector<std::vector<double>>> pulled(static_cast<size_t>(num_workers));
  // Each worker starts from its own (different) weights: the first pull must replace them.
  std::vector<std::shared_ptr<nn::Module>> models;
  for (int w = 0; w < num_workers; ++w) models.push_back(make_mlp(seed + 100 + static_cast<uint64_t>(w)));
  run_workers(num_workers, [&](int w) {
    auto& model = models[static_cast<size_t>(w)];
    ParameterServerClient client(model->parameters(), job.plan, job.client_options(w));
    for (int s = 0; s < steps; ++s) {
      client.pull();
      for (int64_t v : client.versions()) ASSERT_EQ(v, s);
      for (auto& p : model->parameters()) p.set_grad(Tensor());
      mse_loss(model->forward(shard_rows(xs[s], w, num_workers)), shard_rows(ys[s], w, num_workers)).backward();
      const PushResult r = client.push();
      ASSERT_EQ(r.applied, num_ps);
      ASSERT_EQ(r.refused, 0);
    }
    client.pull();
    pulled[static_cast<size_t>(w)] = values(model->parameters());
    client.finish();
  });
  job.wait_until_done();
  const auto expected = values(ref->parameters());
  EXPECT_LT(max_diff(values(job.parameters()), expected), 1e-5);
  for (int w = 0; w < num_workers; ++w) EXPECT_LT(max_diff(pulled[static_cast<size_t>(w)], expected), 1e-5);
  for (auto& s : job.servers) {
    const ServerStats st = s->stats();
    EXPECT_EQ(st.version, steps);
    EXPECT_EQ(st.pushes_applied, steps * num_workers);
    EXPECT_EQ(st.workers_lost, 0);
  }
  // And it moved: the parameters are not the initial ones.
  EXPECT_GT(max_diff(values(job.parameters()), values(init->parameters())), 1e-3);
}

TEST(ParameterServerSync, MatchesOneProcessOnTheWholeBatchSGD) {
  check_sync_matches_one_process(2, 3, sgd(0.1, 0.9), 11);
  check_sync_matches_one_process(1, 2, sgd(0.1, 0.9), 12);
}

TEST(ParameterServerSync, MatchesOneProcessOnTheWholeBatchAdamW) {
  check_sync_matches_one_process(3, 4, adamw(0.01), 13);  // more PS than some layers: one holds one bias only
}

TEST(ParameterServerSync, DeadWorkerLeavesTheStepToTheOthers) {
  auto init = make_mlp(5);
  Job job(init->parameters(), 2,
          {.mode = Mode::Sync,
           .num_workers = 2,
           .make_optimizer = sgd(0.05),
           .rejoin_grace = std::chrono::milliseconds(100)});
  auto a = make_mlp(6), b = make_mlp(7);
  ParameterServerClient ca(a->parameters(), job.plan, job.client_options(0));
  {
    ParameterServerClient cb(b->parameters(), job.plan, job.client_options(1));
    cb.pull();
  }  // worker 1 dies (sockets closed without BYE) before pushing
  manual_seed(8);
  for (int s = 0; s < 3; ++s) {
    ca.pull();
    for (auto& p : a->parameters()) p.set_grad(Tensor());
    mse_loss(a->forward(randn({4, 5})), randn({4, 3})).backward();
    EXPECT_EQ(ca.push().applied, 2);  // would hang until the timeout if the PS still waited for worker 1
  }
  ca.finish();
  job.wait_until_done();
  for (auto& s : job.servers) {
    EXPECT_EQ(s->stats().version, 3);
    EXPECT_EQ(s->stats().workers_lost, 1);
  }
}

TEST(ShardPlan, SizeBalancedPlacesEveryParameterOnceAndBalancesBytes) {
  std::mt19937 gen(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int64_t> numels(std::uniform_int_distribution<size_t>(1, 30)(gen));
    for (auto& n : numels) n = std::uniform_int_distribution<int64_t>(0, 5000)(gen);
    const int num_ps = std::uniform_int_distribution<int>(1, 6)(gen);
    const ShardPlan plan = make_shard_plan(numels, num_ps);
    std::vector<int64_t> load(static_cast<size_t>(num_ps), 0);
    std::vector<int> seen(numels.size(), 0);
    for (int s = 0; s < num_ps; ++s) {
      EXPECT_TRUE(std::is_sorted(plan.owned[static_cast<size_t>(s)].begin(), plan.owned[static_cast<size_t>(s)].end()));
      for (int p : plan.owned[static_cast<size_t>(s)]) {
        ++seen[static_cast<size_t>(p)];
        EXPECT_EQ(plan.owner[static_cast<size_t>(p)], s);
        load[static_cast<size_t>(s)] += numels[static_cast<size_t>(p)];
      }
      EXPECT_EQ(plan.shard_numel(s), load[static_cast<size_t>(s)]);
    }
    for (int c : seen) EXPECT_EQ(c, 1);
    // Greedy largest-first: the spread is at most the largest parameter.
    const int64_t spread = *std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end());
    EXPECT_LE(spread, *std::max_element(numels.begin(), numels.end()));
  }
}

TEST(ShardPlan, RoundRobinFingerprintsAndErrors) {
  const ShardPlan rr = make_shard_plan({4, 4, 4, 4, 4}, 2, ShardPolicy::RoundRobin);
  EXPECT_EQ(rr.owner, (std::vector<int>{0, 1, 0, 1, 0}));
  EXPECT_NE(make_shard_plan({4, 5}, 2).fingerprint(), make_shard_plan({4, 6}, 2).fingerprint());
  EXPECT_NE(make_shard_plan({4, 5}, 1).fingerprint(), make_shard_plan({4, 5}, 2).fingerprint());
  EXPECT_THROW(make_shard_plan({1}, 0), anvil::Error);
  EXPECT_THROW(make_shard_plan({1, -2}, 1), anvil::Error);
  EXPECT_THROW(rr.shard_numel(2), anvil::Error);
}

}  // namespace
}  // namespace anvil::distributed::ps
