// DDP around a module whose forward takes two tensors (tokens and a key
// padding mask, through nn::Module::forward_inputs): two Gloo ranks, each on
// its half of the batch and of the mask, end each backward with the
// gradients of one process on the whole batch, and after several SGD steps
// with its parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/ddp/ddp.h"
#include "nn/layers/layers.h"
#include "nn/layers/multihead_attention.h"
#include "nn/optim/optim.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using testing::run_ranks;

constexpr int64_t kBatch = 8, kLen = 5, kEmbed = 6;

// Self-attention over x [N, T, E] ignoring the padded keys (mask [N, T],
// true = padding, PyTorch's sense), mean over positions, a linear head.
class MaskedEncoder : public nn::Module {
 public:
  MaskedEncoder()
      : nn::Module("MaskedEncoder"),
        attn(std::make_shared<nn::MultiheadAttention>(nn::MultiheadAttentionOptions(kEmbed, 2).batch_first(true))),
        head(std::make_shared<nn::Linear>(kEmbed, 2)) {
    register_module("attn", attn);
    register_module("head", head);
    to(kFloat64);
  }
  Tensor forward_inputs(const std::vector<Tensor>& in) override {
    ANVIL_CHECK(in.size() == 2, "MaskedEncoder: takes (x, padding_mask), got ", in.size(), " inputs");
    return head->forward(mean((*attn)(in[0], in[0], in[0], in[1]), {1}));
  }
  std::shared_ptr<nn::MultiheadAttention> attn;
  std::shared_ptr<nn::Linear> head;
};

struct Batch {
  Tensor x, mask, y;
};
std::vector<Batch> make_batches(int steps) {
  std::vector<Batch> out;
  for (int s = 0; s < steps; ++s) {
    Tensor mask = rand({kBatch, kLen}, kFloat64) < 0.4;
    mask.narrow(1, 0, 1).fill_(false);  // every sequence keeps its first token
    out.push_back({randn({kBatch, kLen, kEmbed}, kFloat64), mask, randn({kBatch, 2}, kFloat64)});
  }
  return out;
}

Tensor half(const Tensor& t, int rank) { return t.narrow(0, rank * (kBatch / 2), kBatch / 2); }

std::vector<std::vector<double>> values(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.to_vector<double>());
  return out;
}

double max_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].size(), b[i].size());
    for (size_t j = 0; j < a[i].size() && j < b[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  }
  return m;
}

std::vector<Tensor> grads(nn::Module& m) {
  std::vector<Tensor> g;
  for (const Tensor& p : m.parameters()) g.push_back(p.grad());
  return g;
}

TEST(DDPSeveralInputs, TwoRanksMatchOneProcessOnTheWholeBatch) {
  manual_seed(21);
  const int steps = 3;
  auto reference = std::make_shared<MaskedEncoder>();
  nn::StateDict init;
  for (auto& [name, t] : reference->state_dict()) init.emplace_back(name, t.clone());
  const std::vector<Batch> data = make_batches(steps);

  // One process, whole batch: the gradients of each step and the final parameters.
  std::vector<std::vector<std::vector<double>>> want_grads;
  nn::optim::SGD ref_opt(reference->parameters(), nn::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  for (const Batch& b : data) {
    ref_opt.zero_grad();
    mse_loss((*reference)(b.x, b.mask), b.y).backward();
    want_grads.push_back(values(grads(*reference)));
    ref_opt.step();
  }
  const auto want_params = values(reference->parameters());
  // The mask changes the result, so a rank that dropped it could not pass.
  {
    NoGradGuard no_grad;
    const Tensor no_padding = zeros({kBatch, kLen}, kBool);
    EXPECT_GT(
        (((*reference)(data[0].x, no_padding)) - (*reference)(data[0].x, data[0].mask)).abs().max().item<double>(),
        1e-6);
  }

  // Rank 1 starts from other values: DDP's broadcast replaces them.
  std::vector<std::shared_ptr<MaskedEncoder>> models{std::make_shared<MaskedEncoder>(),
                                                     std::make_shared<MaskedEncoder>()};
  models[0]->load_state_dict(init);
  std::vector<std::vector<std::vector<std::vector<double>>>> got_grads(2);
  std::vector<std::vector<std::vector<double>>> got_params(2);
  run_ranks(2, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    auto ddp = std::make_shared<DistributedDataParallel>(models[r], group);
    nn::optim::SGD opt(ddp->parameters(), nn::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    for (const Batch& b : data) {
      opt.zero_grad();
      mse_loss((*ddp)(half(b.x, r), half(b.mask, r)), half(b.y, r)).backward();
      got_grads[r].push_back(values(grads(*ddp)));
      opt.step();
    }
    got_params[r] = values(ddp->parameters());
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got_grads[r].size(), want_grads.size());
    for (int s = 0; s < steps; ++s)
      EXPECT_LT(max_diff(got_grads[r][s], want_grads[s]), 1e-10) << "rank " << r << " step " << s;
    EXPECT_LT(max_diff(got_params[r], want_params), 1e-10) << "rank " << r;
  }
}

TEST(DDPSeveralInputs, WrongInputCountNamesTheModule) {
  auto model = std::make_shared<MaskedEncoder>();
  run_ranks(1, [&](std::shared_ptr<ProcessGroup> group) {
    DistributedDataParallel ddp(model, group);
    const Tensor x = randn({2, kLen, kEmbed}, kFloat64);
    try {
      ddp.forward(x);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("MaskedEncoder: takes (x, padding_mask), got 1 inputs"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace anvil::distributed
