// DistributedDataParallel: N ranks, each on its shard of the batch, end with
// the same parameters as one process on the whole batch (SGD with momentum
// and AdamW, several steps, several bucket layouts, with and without
// overlap); no_sync accumulation; unused parameters; start-up broadcast.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/ddp/ddp.h"
#include "distributed/process_group/device_mesh.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using testing::run_ranks;

constexpr int64_t kBatch = 12;  // divisible by 2 and 3: every shard's mean weighs the same

std::shared_ptr<nn::Module> make_mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 7), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(7, 6), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(6, 3));
}

std::vector<std::vector<double>> values(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.to_vector<double>());
  return out;
}

double max_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  return m;
}

struct Data {
  std::vector<Tensor> x, y;  // one batch per step
};
Data make_data(int steps) {
  Data d;
  for (int s = 0; s < steps; ++s) {
    d.x.push_back(randn({kBatch, 5}, kFloat64));
    d.y.push_back(randn({kBatch, 3}, kFloat64));
  }
  return d;
}

Tensor shard(const Tensor& t, int rank, int ranks) {
  const int64_t per = t.size(0) / ranks;
  return t.narrow(0, rank * per, per);
}

enum class Opt { SGD, AdamW };
std::unique_ptr<nn::optim::Optimizer> make_optimizer(Opt kind, std::vector<Tensor> params) {
  if (kind == Opt::SGD)
    return std::make_unique<nn::optim::SGD>(std::move(params), nn::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  return std::make_unique<nn::optim::AdamW>(std::move(params), nn::optim::AdamWOptions{.lr = 0.01});
}

// One process, whole batch: what every DDP rank must reproduce.
std::vector<std::vector<double>> reference(const nn::StateDict& init, const Data& data, Opt kind) {
  auto model = make_mlp();
  model->to(kFloat64);
  model->load_state_dict(init);
  auto opt = make_optimizer(kind, model->parameters());
  for (size_t s = 0; s < data.x.size(); ++s) {
    opt->zero_grad();
    mse_loss(model->forward(data.x[s]), data.y[s]).backward();
    opt->step();
  }
  return values(model->parameters());
}

// Models for every rank, made on the main thread. Ranks other than 0 start
// from other values: DDP's broadcast must replace them.
std::vector<std::shared_ptr<nn::Module>> rank_models(int n, const nn::StateDict& init) {
  std::vector<std::shared_ptr<nn::Module>> models;
  for (int r = 0; r < n; ++r) {
    auto m = make_mlp();
    m->to(kFloat64);
    if (r == 0) m->load_state_dict(init);
    models.push_back(m);
  }
  return models;
}

nn::StateDict initial_state() {
  auto m = make_mlp();
  m->to(kFloat64);
  nn::StateDict s;
  for (auto& [name, t] : m->state_dict()) s.emplace_back(name, t.clone());
  return s;
}

void check_equivalence(int n, Opt kind, DDPOptions options) {
  SCOPED_TRACE("ranks=" + std::to_string(n) + " bucket_cap_bytes=" + std::to_string(options.bucket_cap_bytes) +
               " overlap=" + std::to_string(options.overlap_communication));
  const int steps = 4;
  nn::StateDict init = initial_state();
  Data data = make_data(steps);
  auto expected = reference(init, data, kind);
  auto models = rank_models(n, init);
  std::vector<std::vector<std::vector<double>>> got(n);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    auto ddp = std::make_shared<DistributedDataParallel>(models[r], group, options);
    auto opt = make_optimizer(kind, ddp->parameters());
    for (int s = 0; s < steps; ++s) {
      opt->zero_grad();
      mse_loss(ddp->forward(shard(data.x[s], r, n)), shard(data.y[s], r, n)).backward();
      opt->step();
    }
    got[r] = values(ddp->parameters());
  });
  for (int r = 0; r < n; ++r) EXPECT_LT(max_diff(got[r], expected), 1e-10) << "rank " << r;
}

TEST(DDP, MatchesOneProcessOnTheWholeBatchSGD) {
  for (int n : {2, 3}) {
    check_equivalence(n, Opt::SGD, {});  // one bucket
    check_equivalence(n, Opt::SGD, {.bucket_cap_bytes = 200});  // a bucket per tensor or two
  }
}

// DDP on a subgroup: a 2x2 ("dp", "tp") mesh where each column ({0, 2} and
// {1, 3}) is its own data-parallel job on its own data, both at once. Each
// column's ranks must reproduce one process on that column's whole batches.
TEST(DDP, EachDpGroupOfAMeshMatchesItsOwnSingleProcessRun) {
  const int steps = 3;
  nn::StateDict init = initial_state();
  std::vector<Data> data = {make_data(steps), make_data(steps)};
  std::vector<std::vector<std::vector<double>>> expected = {reference(init, data[0], Opt::SGD),
                                                            reference(init, data[1], Opt::SGD)};
  // Ranks 0 and 1 (each column's group rank 0) hold init; 2 and 3 start elsewhere.
  auto models = rank_models(4, init);
  models[1]->load_state_dict(init);
  std::vector<std::vector<std::vector<double>>> got(4);
  testing::run_world_ranks(4, [&](World& world, std::shared_ptr<ProcessGroup>) {
    const int r = world.rank(), col = r % 2;
    DeviceMesh mesh(world, "cpu", {2, 2}, {"dp", "tp"});
    auto dp = mesh.get_group("dp");
    const int dr = dp->rank();
    auto ddp = std::make_shared<DistributedDataParallel>(models[r], dp, DDPOptions{.bucket_cap_bytes = 200});
    auto opt = make_optimizer(Opt::SGD, ddp->parameters());
    for (int s = 0; s < steps; ++s) {
      opt->zero_grad();
      mse_loss(ddp->forward(shard(data[col].x[s], dr, 2)), shard(data[col].y[s], dr, 2)).backward();
      opt->step();
    }
    got[r] = values(ddp->parameters());
    dp->barrier()->wait();
  });
  for (int r = 0; r < 4; ++r) EXPECT_LT(max_diff(got[r], expected[r % 2]), 1e-10) << "rank " << r;
  EXPECT_GT(max_diff(expected[0], expected[1]), 1e-3);  // the columns really trained apart
}

TEST(DDP, MatchesOneProcessOnTheWholeBatchAdamW) {
  for (int n : {2, 3}) {
    check_equivalence(n, Opt::AdamW, {.bucket_cap_bytes = 300});
    check_equivalence(n, Opt::AdamW, {.bucket_cap_bytes = 300, .overlap_communication = false});
  }
}

TEST(DDP, BucketsFollowReverseParameterOrderAndCap) {
  auto model = make_mlp();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    // float32: 2.weight is 7*6*4 = 168 bytes, 4.weight 72, 4.bias 12 ...
    DistributedDataParallel ddp(model, group, {.bucket_cap_bytes = 100});
    auto buckets = ddp.bucket_parameter_names();
    ASSERT_FALSE(buckets.empty());
    EXPECT_EQ(buckets.front().front(), "4.bias");
    EXPECT_EQ(buckets.back().back(), "0.weight");
    for (const auto& b : buckets) EXPECT_FALSE(b.empty());
    // 4.bias (12) + 4.weight (72) fit in 100 bytes; 2.bias (24) would not.
    EXPECT_EQ(buckets.front(), (std::vector<std::string>{"4.bias", "4.weight"}));
  });
}

TEST(DDP, BroadcastsRankZerosParametersAtConstruction) {
  const int n = 3;
  auto models = rank_models(n, initial_state());
  std::vector<std::vector<std::vector<double>>> got(n);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    DistributedDataParallel ddp(models[group->rank()], group);
    got[group->rank()] = values(ddp.parameters());
  });
  for (int r = 1; r < n; ++r) EXPECT_EQ(max_diff(got[r], got[0]), 0.0) << "rank " << r;
}

// Gradient accumulation: micro-batches under no_sync, the last one synced,
// equal one process accumulating the same micro-batches over the whole data.
TEST(DDP, NoSyncAccumulationMatchesOneProcess) {
  const int micro = 3;
  for (int n : {2, 3}) {
    nn::StateDict init = initial_state();
    Data data = make_data(micro);
    auto ref_model = make_mlp();
    ref_model->to(kFloat64);
    ref_model->load_state_dict(init);
    for (int m = 0; m < micro; ++m) mse_loss(ref_model->forward(data.x[m]), data.y[m]).backward();
    std::vector<std::vector<double>> expected;
    for (const Tensor& p : ref_model->parameters()) expected.push_back(p.grad().to_vector<double>());

    auto models = rank_models(n, init);
    std::vector<std::vector<std::vector<double>>> got(n), before_sync(n);
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      auto ddp = std::make_shared<DistributedDataParallel>(models[r], group, DDPOptions{.bucket_cap_bytes = 256});
      {
        auto guard = ddp->no_sync();
        for (int m = 0; m + 1 < micro; ++m)
          mse_loss(ddp->forward(shard(data.x[m], r, n)), shard(data.y[m], r, n)).backward();
      }
      std::vector<std::vector<double>> local;
      for (const Tensor& p : ddp->parameters()) local.push_back(p.grad().to_vector<double>());
      before_sync[r] = local;
      mse_loss(ddp->forward(shard(data.x[micro - 1], r, n)), shard(data.y[micro - 1], r, n)).backward();
      for (const Tensor& p : ddp->parameters()) got[r].push_back(p.grad().to_vector<double>());
    });
    for (int r = 0; r < n; ++r) EXPECT_LT(max_diff(got[r], expected), 1e-12) << "n=" << n << " rank " << r;
    // Under no_sync the ranks' gradients were their own (different shards).
    EXPECT_GT(max_diff(before_sync[0], before_sync[1]), 1e-6);
  }
}

// fc2 is registered but never used in forward.
struct WithUnused : nn::Module {
  std::shared_ptr<nn::Linear> fc1, unused, fc3;
  WithUnused() : nn::Module("WithUnused") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 4));
    unused = register_module("unused", std::make_shared<nn::Linear>(4, 4));
    fc3 = register_module("fc3", std::make_shared<nn::Linear>(4, 2));
  }
  Tensor forward(const Tensor& x) override { return fc3->forward(tanh(fc1->forward(x))); }
};

TEST(DDP, UnusedParameterIsAnErrorNamingIt) {
  const int n = 2;
  std::vector<std::shared_ptr<nn::Module>> models{std::make_shared<WithUnused>(), std::make_shared<WithUnused>()};
  Tensor x = randn({4, 4}), y = randn({4, 2});
  std::vector<std::string> messages(n);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    DistributedDataParallel ddp(models[r], group);
    try {
      mse_loss(ddp.forward(shard(x, r, n)), shard(y, r, n)).backward();
    } catch (const Error& e) {
      messages[r] = e.what();
    }
    // The failed step left DDP ready for the next one (here: a clean error again).
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_NE(messages[r].find("unused.weight"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("unused.bias"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("find_unused_parameters"), std::string::npos) << messages[r];
    EXPECT_EQ(messages[r].find("fc1.weight"), std::string::npos) << messages[r];
  }
}

TEST(DDP, FindUnusedParametersAveragesThemAsZero) {
  const int n = 2;
  std::vector<std::shared_ptr<nn::Module>> models{std::make_shared<WithUnused>(), std::make_shared<WithUnused>()};
  Tensor x = randn({4, 4}), y = randn({4, 2});
  // The whole-batch gradient of fc1.weight, from rank 0's initial values.
  auto ref = std::make_shared<WithUnused>();
  ref->load_state_dict(models[0]->state_dict());
  mse_loss(ref->forward(x), y).backward();
  const std::vector<double> expected = ref->fc1->weight.grad().to_vector<double>();
  std::vector<std::vector<double>> fc1(n), unused(n);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    DistributedDataParallel ddp(models[r], group, {.bucket_cap_bytes = 64, .find_unused_parameters = true});
    for (int step = 0; step < 2; ++step) {  // twice: the state resets between steps
      ddp.zero_grad();
      mse_loss(ddp.forward(shard(x, r, n)), shard(y, r, n)).backward();
    }
    auto* m = static_cast<WithUnused*>(models[r].get());
    fc1[r] = m->fc1->weight.grad().to_vector<double>();
    unused[r] = m->unused->weight.grad().to_vector<double>();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_LT(max_diff({fc1[r]}, {expected}), 1e-5) << "rank " << r;
    for (double v : unused[r]) EXPECT_EQ(v, 0.0);
  }
}

TEST(DDP, EvaluationWithoutGradNeedsNoBackward) {
  const int n = 2;
  auto models = rank_models(n, initial_state());
  Data data = make_data(2);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    DistributedDataParallel ddp(models[r], group);
    {
      NoGradGuard no_grad;
      ddp.forward(data.x[0]);  // no backward follows: nothing may be left pending
    }
    mse_loss(ddp.forward(shard(data.x[1], r, n)), shard(data.y[1], r, n)).backward();
    for (const Tensor& p : ddp.parameters()) EXPECT_TRUE(p.grad().defined());
  });
}

}  // namespace
}  // namespace anvil::distributed
