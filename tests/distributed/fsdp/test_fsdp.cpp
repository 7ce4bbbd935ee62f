// FullyShardedDataParallel (ZeRO-3, and ZeRO-2 as ShardGradOp): on 2 and 4
// ranks, AdamW on the shards with gradient accumulation and global-norm
// clipping ends with the same parameters as AdamW on one process over the
// whole batch; full and sharded state dicts; memory per rank ~1/N plus the
// gathered units; clear errors on bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "distributed/fsdp/fsdp.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"
#include "nn/serialize/safetensors.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using testing::run_ranks;

// Units of 42, 42 and 21 parameters: no world size of 2 or 4 divides them
// all, so the padding is exercised.
std::shared_ptr<nn::Sequential> make_model(DType dtype = kFloat64) {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 7), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(7, 6), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(6, 3));
  m->to(dtype);
  return m;
}

double max_diff(const nn::StateDict& a, const nn::StateDict& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.shape(), b[i].second.shape()) << a[i].first;
    std::vector<double> x = a[i].second.to(kFloat64).to_vector<double>(),
                        y = b[i].second.to(kFloat64).to_vector<double>();
    for (size_t j = 0; j < x.size() && j < y.size(); ++j) m = std::max(m, std::abs(x[j] - y[j]));
  }
  return m;
}

struct Batches {
  std::vector<Tensor> xs, ys;  // [step * accumulation + micro]
};

Batches random_batches(int count, int64_t rows, DType dtype) {
  Batches b;
  for (int i = 0; i < count; ++i) {
    b.xs.push_back(randn({rows, 5}, TensorOptions().dtype(dtype)));
    b.ys.push_back(randn({rows, 3}, TensorOptions().dtype(dtype)));
  }
  return b;
}

constexpr int kSteps = 3, kAccumulation = 2;
constexpr int64_t kRows = 8;
constexpr double kMaxNorm = 0.3;
const nn::optim::AdamWOptions kAdamW{.lr = 0.05, .weight_decay = 0.1};

// One process over whole batches: the result FSDP must reproduce.
struct Reference {
  nn::StateDict state;
  std::vector<double> norms;
};
Reference train_unsharded(const nn::StateDict& init, const Batches& data, DType dtype,
                          const nn::optim::AdamWOptions& adamw = kAdamW) {
  auto model = make_model(dtype);
  model->load_state_dict(init);
  nn::optim::AdamW opt(model->parameters(), adamw);
  Reference ref;
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    for (int a = 0; a < kAccumulation; ++a) {
      const int i = s * kAccumulation + a;
      (mse_loss(model->forward(data.xs[i]), data.ys[i]) / Scalar(double(kAccumulation))).backward();
    }
    ref.norms.push_back(nn::optim::clip_grad_norm_(model->parameters(), kMaxNorm));
    opt.step();
  }
  ref.state = model->state_dict();
  return ref;
}

// Each rank trains on its rows of every batch and returns its full state dict.
void train_sharded(FullyShardedDataParallel& fsdp, int rank, int n, const Batches& data, std::vector<double>* norms,
                   const nn::optim::AdamWOptions& adamw = kAdamW) {
  nn::optim::AdamW opt(fsdp.parameters(), adamw);
  const int64_t per = kRows / n;
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    for (int a = 0; a < kAccumulation; ++a) {
      const int i = s * kAccumulation + a;
      Tensor x = data.xs[i].narrow(0, rank * per, per), y = data.ys[i].narrow(0, rank * per, per);
      // The output is in the compute dtype (bfloat16 under mixed precision).
      (mse_loss(fsdp.forward(x).to(y.dtype()), y) / Scalar(double(kAccumulation))).backward();
    }
    norms->push_back(fsdp.clip_grad_norm_(kMaxNorm));
    opt.step();
  }
}

struct Config {
  ShardingStrategy strategy;
  bool prefetch;
  const char* name;
};

TEST(FSDP, MatchesAdamWOnOneProcessWithAccumulationAndClipping) {
  const Config configs[] = {{ShardingStrategy::FullShard, true, "ZeRO-3 with prefetch"},
                            {ShardingStrategy::FullShard, false, "ZeRO-3 without prefetch"},
                            {ShardingStrategy::ShardGradOp, true, "ZeRO-2"}};
  for (int n : {2, 4}) {
    for (const Config& config : configs) {
      auto init = make_model();
      const Batches data = random_batches(kSteps * kAccumulation, kRows, kFloat64);
      const Reference ref = train_unsharded(init->state_dict(), data, kFloat64);
      ASSERT_GT(ref.norms.front(), kMaxNorm) << "the test must exercise clipping";

      std::vector<std::shared_ptr<nn::Sequential>> models;
      for (int r = 0; r < n; ++r) models.push_back(r == 0 ? init : make_model());  // others get rank 0's
      std::vector<nn::StateDict> got(n);
      std::vector<std::vector<double>> norms(n);
      run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
        const int r = group->rank();
        FullyShardedDataParallel fsdp(models[r], group,
                                      {.sharding_strategy = config.strategy,
                                       .forward_prefetch = config.prefetch,
                                       .backward_prefetch = config.prefetch});
        train_sharded(fsdp, r, n, data, &norms[r]);
        got[r] = fsdp.full_state_dict();
      });
      for (int r = 0; r < n; ++r) {
        EXPECT_LT(max_diff(got[r], ref.state), 1e-10) << config.name << ", n=" << n << ", rank " << r;
        ASSERT_EQ(norms[r].size(), ref.norms.size());
        for (size_t s = 0; s < ref.norms.size(); ++s)
          EXPECT_NEAR(norms[r][s], ref.norms[s], 1e-10) << config.name << ", n=" << n << ", step " << s;
      }
    }
  }
}

TEST(FSDP, MixedPrecisionComputesInBfloat16WithFloat32Masters) {
  const int n = 2;
  auto init = make_model(kFloat32);
  const Batches data = random_batches(kSteps * kAccumulation, kRows, kFloat32);
  // A large eps keeps Adam's step proportional to small gradients: with the
  // default, bf16 rounding flips the sign of near-zero gradients and with it
  // a whole lr-sized step.
  const nn::optim::AdamWOptions adamw{.lr = 0.05, .eps = 0.1, .weight_decay = 0.1};
  const Reference ref = train_unsharded(init->state_dict(), data, kFloat32, adamw);
  std::vector<std::shared_ptr<nn::Sequential>> models{init, make_model(kFloat32)};
  std::vector<nn::StateDict> got(n);
  std::vector<DType> gathered_dtype(n, kFloat32), shard_dtype(n, kFloat64);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    FullyShardedDataParallel fsdp(models[r], group, {.param_dtype = kBFloat16});
    std::vector<double> norms;
    train_sharded(fsdp, r, n, data, &norms, adamw);
    // After a forward the last unit stays gathered: its parameters are the compute copies.
    fsdp.forward(data.xs[0].narrow(0, r * 4, 4));
    gathered_dtype[r] = models[r]->at<nn::Linear>(4)->weight.dtype();
    shard_dtype[r] = fsdp.unit(0).shard().dtype();
    got[r] = fsdp.full_state_dict();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(gathered_dtype[r], kBFloat16);
    EXPECT_EQ(shard_dtype[r], kFloat32);
    EXPECT_EQ(got[r].front().second.dtype(), kFloat32);
    // bf16 has 8 bits of mantissa: close to the float32 run, not equal.
    const double diff = max_diff(got[r], ref.state);
    EXPECT_LT(diff, 1e-2) << "rank " << r;
    EXPECT_GT(diff, 0.0) << "rank " << r << ": the computation should have run in bfloat16";
  }
}

TEST(FSDP, FullStateDictSavesAsSafetensorsThatAnUnshardedModelLoads) {
  const int n = 2;
  auto init = make_model();
  const Batches data = random_batches(kSteps * kAccumulation, kRows, kFloat64);
  const Reference ref = train_unsharded(init->state_dict(), data, kFloat64);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("anvil_fsdp_" + std::to_string(::getpid()) + ".safetensors");
  std::vector<std::shared_ptr<nn::Sequential>> models{init, make_model()};
  std::vector<size_t> rank0_only_sizes(n);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    FullyShardedDataParallel fsdp(models[r], group);
    std::vector<double> norms;
    train_sharded(fsdp, r, n, data, &norms);
    fsdp.save_full_state_dict(path);
    rank0_only_sizes[r] = fsdp.full_state_dict(/*rank0_only=*/true).size();
  });
  EXPECT_EQ(rank0_only_sizes[0], 6u);
  EXPECT_EQ(rank0_only_sizes[1], 0u);
  auto unsharded = make_model();
  unsharded->load_state_dict(nn::serialize::load_safetensors(path));  // strict: every name and shape
  std::filesystem::remove(path);
  EXPECT_LT(max_diff(unsharded->state_dict(), ref.state), 1e-10);
}

TEST(FSDP, ShardedStateDictRestoresTheShards) {
  const int n = 4;
  std::vector<std::shared_ptr<nn::Sequential>> models;
  for (int r = 0; r < n; ++r) models.push_back(make_model());
  const Batches data = random_batches(kSteps * kAccumulation, kRows, kFloat64);
  std::vector<double> restored_diff(n, -1), moved_diff(n, -1);
  std::vector<int64_t> shard_numel(n);
  const std::string prefix =
      (std::filesystem::temp_directory_path() / ("anvil_fsdp_shards_" + std::to_string(::getpid()) + "_")).string();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    FullyShardedDataParallel fsdp(models[r], group);
    const nn::StateDict saved = fsdp.sharded_state_dict();
    const nn::StateDict saved_full = fsdp.full_state_dict();
    const std::filesystem::path file = fsdp.save_sharded_state_dict(prefix);
    std::vector<double> norms;
    train_sharded(fsdp, r, n, data, &norms);
    moved_diff[r] = max_diff(fsdp.full_state_dict(), saved_full);
    fsdp.load_sharded_state_dict_file(prefix);
    std::filesystem::remove(file);
    // Forward must gather the restored shards, not reuse what it held.
    fsdp.forward(data.xs[0].narrow(0, 0, 2));
    restored_diff[r] = max_diff(fsdp.full_state_dict(), saved_full);
    shard_numel[r] = saved.front().second.numel();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_GT(moved_diff[r], 1e-3) << "training should have changed the weights";
    EXPECT_EQ(restored_diff[r], 0.0) << "rank " << r;
    EXPECT_EQ(shard_numel[r], 11);  // ceil(42 / 4)
  }
}

TEST(FSDP, ForwardWithoutGradMatchesTheUnshardedModelAndFreesEveryUnitButTheLast) {
  for (int n : {1, 2}) {
    std::vector<std::shared_ptr<nn::Sequential>> models;
    for (int r = 0; r < n; ++r) models.push_back(make_model());
    Tensor x = randn({3, 5}, kFloat64);
    const std::vector<double> expected = models[0]->forward(x).to_vector<double>();  // rank 0's, before sharding
    std::vector<std::vector<double>> got(n), after_second(n);
    std::vector<std::vector<bool>> gathered(n);
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      FullyShardedDataParallel fsdp(models[r], group);
      NoGradGuard no_grad;
      got[r] = fsdp.forward(x).to_vector<double>();
      for (size_t u = 0; u < fsdp.num_units(); ++u) gathered[r].push_back(fsdp.unit(u).is_gathered());
      after_second[r] = fsdp.forward(x).to_vector<double>();
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(got[r].size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(got[r][i], expected[i]) << "n=" << n << " rank " << r;
        EXPECT_EQ(after_second[r][i], expected[i]) << "n=" << n << " rank " << r;
      }
      EXPECT_EQ(gathered[r], (std::vector<bool>{false, false, true})) << "n=" << n << " rank " << r;
    }
  }
}

// A model that is not a Sequential: residual blocks called by its own
// forward, its units marked with FsdpWrapped.
struct ResidualBlock : nn::Module {
  std::shared_ptr<nn::Linear> a, b;
  ResidualBlock() : nn::Module("ResidualBlock") {
    a = register_module("a", std::make_shared<nn::Linear>(6, 6));
    b = register_module("b", std::make_shared<nn::Linear>(6, 6));
  }
  Tensor forward(const Tensor& x) override { return x + b->forward(a->forward(x).tanh()); }
};

struct ResidualNet : nn::Module {
  std::shared_ptr<FsdpWrapped> in, block1, block2, out;
  ResidualNet() : nn::Module("ResidualNet") {
    in = register_module("in", std::make_shared<FsdpWrapped>(std::make_shared<nn::Linear>(5, 6)));
    block1 = register_module("block1", std::make_shared<FsdpWrapped>(std::make_shared<ResidualBlock>()));
    block2 = register_module("block2", std::make_shared<FsdpWrapped>(std::make_shared<ResidualBlock>()));
    out = register_module("out", std::make_shared<FsdpWrapped>(std::make_shared<nn::Linear>(6, 3)));
    to(kFloat64);
  }
  Tensor forward(const Tensor& x) override {
    return out->forward(block2->forward(block1->forward(in->forward(x).tanh())));
  }
};

TEST(FSDP, WrappedUnitsOfAnyModelMatchAdamWOnOneProcess) {
  for (int n : {2, 4}) {
    std::vector<std::shared_ptr<ResidualNet>> models;
    for (int r = 0; r < n; ++r) models.push_back(std::make_shared<ResidualNet>());
    const Batches data = random_batches(kSteps * kAccumulation, kRows, kFloat64);
    // The reference: the same model unsharded (FsdpWrapped then just runs its module).
    auto ref = std::make_shared<ResidualNet>();
    ref->load_state_dict(models[0]->state_dict());
    nn::optim::AdamW ref_opt(ref->parameters(), kAdamW);
    std::vector<double> ref_norms;
    for (int s = 0; s < kSteps; ++s) {
      ref_opt.zero_grad();
      for (int a = 0; a < kAccumulation; ++a) {
        const int i = s * kAccumulation + a;
        (mse_loss(ref->forward(data.xs[i]), data.ys[i]) / Scalar(double(kAccumulation))).backward();
      }
      ref_norms.push_back(nn::optim::clip_grad_norm_(ref->parameters(), kMaxNorm));
      ref_opt.step();
    }
    ASSERT_GT(ref_norms.front(), kMaxNorm);
    std::vector<nn::StateDict> got(n);
    std::vector<std::vector<double>> norms(n);
    std::vector<size_t> units(n);
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      FullyShardedDataParallel fsdp(models[r], group);
      units[r] = fsdp.num_units();
      train_sharded(fsdp, r, n, data, &norms[r]);
      got[r] = fsdp.full_state_dict();
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(units[r], 4u);
      EXPECT_LT(max_diff(got[r], ref->state_dict()), 1e-10) << "n=" << n << ", rank " << r;
      for (size_t s = 0; s < ref_norms.size(); ++s) EXPECT_NEAR(norms[r][s], ref_norms[s], 1e-10);
    }
  }
}

TEST(FSDP, ParametersOutsideEveryWrappedUnitAreRefused) {
  struct Partly : nn::Module {
    std::shared_ptr<FsdpWrapped> wrapped;
    std::shared_ptr<nn::Linear> bare;
    Partly() : nn::Module("Partly") {
      wrapped = register_module("wrapped", std::make_shared<FsdpWrapped>(std::make_shared<nn::Linear>(2, 2)));
      bare = register_module("bare", std::make_shared<nn::Linear>(2, 2));
    }
  };
  auto model = std::make_shared<Partly>();
  auto plain = std::make_shared<ResidualBlock>();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    try {
      FullyShardedDataParallel fsdp(model, group);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("parameter 'bare.weight' lies outside every FsdpWrapped unit"),
                std::string::npos)
          << e.what();
    }
    try {
      FullyShardedDataParallel fsdp(plain, group);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("(ResidualBlock) is not an nn::Sequential and holds no FsdpWrapped units"),
                std::string::npos)
          << e.what();
    }
  });
}

// A model big enough that padding is noise: 4 layers of 32x32 + 32.
std::shared_ptr<nn::Sequential> make_wide_model() {
  auto m = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 4; ++i) {
    m->push_back(std::make_shared<nn::Linear>(32, 32));
    m->push_back(std::make_shared<nn::ReLU>());
  }
  return m;
}

TEST(FSDP, MemoryPerRankIsAboutOneNthPlusTheGatheredUnits) {
  const int n = 4;
  const Batches data = [] {
    Batches b;
    for (int i = 0; i < 2; ++i) {
      b.xs.push_back(randn({8, 32}));
      b.ys.push_back(randn({8, 32}));
    }
    return b;
  }();
  const Config configs[] = {{ShardingStrategy::FullShard, false, "ZeRO-3, no prefetch"},
                            {ShardingStrategy::FullShard, true, "ZeRO-3, prefetch"},
                            {ShardingStrategy::ShardGradOp, true, "ZeRO-2"}};
  for (const Config& config : configs) {
    std::vector<std::shared_ptr<nn::Sequential>> models;
    for (int r = 0; r < n; ++r) models.push_back(make_wide_model());
    std::vector<FSDPMemoryStats> stats(n);
    std::vector<int64_t> optimizer_bytes(n);
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      FullyShardedDataParallel fsdp(models[r], group,
                                    {.sharding_strategy = config.strategy,
                                     .forward_prefetch = config.prefetch,
                                     .backward_prefetch = config.prefetch});
      nn::optim::AdamW opt(fsdp.parameters());
      for (int s = 0; s < 2; ++s) {
        opt.zero_grad();
        mse_loss(fsdp.forward(data.xs[s].narrow(0, 2 * r, 2)), data.ys[s].narrow(0, 2 * r, 2)).backward();
        opt.step();
      }
      stats[r] = fsdp.memory_stats();
      for (const Tensor& p : fsdp.parameters())
        for (const auto& [name, t] : opt.state_of(p)->buffers) optimizer_bytes[r] += static_cast<int64_t>(t.nbytes());
    });
    const int64_t model_bytes = 4 * (32 * 32 + 32) * 4, unit_bytes = (32 * 32 + 32) * 4;
    for (int r = 0; r < n; ++r) {
      const FSDPMemoryStats& s = stats[r];
      EXPECT_EQ(s.model_param_bytes, model_bytes);
      EXPECT_EQ(s.largest_unit_bytes, unit_bytes);
      EXPECT_EQ(s.sharded_param_bytes, model_bytes / n);  // 1056 divides by 4: no padding
      EXPECT_EQ(s.sharded_grad_bytes, model_bytes / n);
      EXPECT_EQ(optimizer_bytes[r], 2 * model_bytes / n);
      if (config.strategy == ShardingStrategy::ShardGradOp) {
        EXPECT_EQ(s.peak_gathered_param_bytes, model_bytes);  // ZeRO-2 keeps every parameter
      } else if (config.prefetch) {
        EXPECT_LE(s.peak_gathered_param_bytes, 2 * unit_bytes);  // this unit and the prefetched one
      } else {
        EXPECT_EQ(s.peak_gathered_param_bytes, unit_bytes);  // one unit at a time
      }
      EXPECT_LE(s.peak_full_grad_bytes, 2 * unit_bytes);
      EXPECT_GE(s.peak_full_grad_bytes, unit_bytes);
      const int64_t peak = s.sharded_param_bytes + s.sharded_grad_bytes + optimizer_bytes[r] +
                           s.peak_gathered_param_bytes + s.peak_full_grad_bytes;
      if (r == 0)
        std::printf(
            "%s, %d ranks: model %lld B (params+grads+AdamW unsharded: %lld B); per rank: shards %lld + "
            "grads %lld + AdamW %lld + peak gathered %lld + peak full grads %lld = %lld B (%.1f%%)\n",
            config.name, n, static_cast<long long>(model_bytes), static_cast<long long>(4 * model_bytes),
            static_cast<long long>(s.sharded_param_bytes), static_cast<long long>(s.sharded_grad_bytes),
            static_cast<long long>(optimizer_bytes[r]), static_cast<long long>(s.peak_gathered_param_bytes),
            static_cast<long long>(s.peak_full_grad_bytes), static_cast<long long>(peak),
            100.0 * double(peak) / double(4 * model_bytes));
    }
  }
}

TEST(FSDP, BadInputGivesClearErrors) {
  auto expect_error = [](const std::function<void()>& fn, const std::vector<std::string>& words) {
    try {
      fn();
      ADD_FAILURE() << "expected an error mentioning " << words.front();
    } catch (const Error& e) {
      for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  std::vector<std::shared_ptr<nn::Sequential>> models{make_model(), make_model()};
  auto no_params = std::make_shared<nn::Sequential>(std::make_shared<nn::Tanh>());
  run_ranks(2, [&](std::shared_ptr<ProcessGroup> group) {
    expect_error([&] { std::make_shared<FullyShardedDataParallel>(no_params, group); },
                 {"FullyShardedDataParallel", "no parameters"});
    expect_error([&] { std::make_shared<FullyShardedDataParallel>(nullptr, group); },
                 {"FullyShardedDataParallel", "null model"});
    const std::shared_ptr<nn::Sequential>& model = models[group->rank()];
    FullyShardedDataParallel fsdp(model, group);
    expect_error([&] { fsdp.clip_grad_norm_(-1.0); }, {"clip_grad_norm_", "max_norm must be >= 0"});
    expect_error([&] { fsdp.forward(Tensor()); }, {"FullyShardedDataParallel::forward", "undefined"});
    nn::StateDict wrong = fsdp.sharded_state_dict();
    wrong[1].second = zeros({3}, TensorOptions().dtype(kFloat64));
    expect_error([&] { fsdp.load_sharded_state_dict(wrong); }, {"load_sharded_state_dict", "flat_param_2", "expected"});
    expect_error([&] { fsdp.load_sharded_state_dict({}); }, {"load_sharded_state_dict", "missing key 'flat_param_0'"});
    // Shards written by a world of 1 do not load into a world of 2.
    const std::string prefix =
        (std::filesystem::temp_directory_path() /
         ("anvil_fsdp_bad_" + std::to_string(::getpid()) + "_" + std::to_string(group->rank()) + "_"))
            .string();
    nn::serialize::save_safetensors(prefix + "rank" + std::to_string(group->rank()) + "-of-2.safetensors",
                                    fsdp.sharded_state_dict(), {{"fsdp_world_size", "1"}});
    expect_error([&] { fsdp.load_sharded_state_dict_file(prefix); },
                 {"load_sharded_state_dict_file", "holds shards for world size 1, expected 2"});
    std::filesystem::remove(prefix + "rank" + std::to_string(group->rank()) + "-of-2.safetensors");
    expect_error([&] { fsdp.load_sharded_state_dict_file(prefix + "missing_"); },
                 {"load_sharded_state_dict_file", "no file"});
    // The model's own parameters are empty at rest: calling it directly fails on shapes, not on freed memory.
    EXPECT_EQ(model->at<nn::Linear>(0)->weight.numel(), 0);
  });
}

}  // namespace
}  // namespace anvil::distributed
