// nn::Module through real layers: parameter names and order, train/eval,
// to(dtype), state_dict round trips and errors, apply, shared modules, repr.
#include <gtest/gtest.h>

#include "nn/init.h"
#include "nn/layers/layers.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::names_of;

// A small model with nesting, buffers and several kinds of layers.
struct Net : nn::Module {
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::Sequential> head;
  Net() : nn::Module("Net") {
    conv = register_module("conv", std::make_shared<nn::Conv2d>(nn::Conv2dOptions{
                                       .in_channels = 1, .out_channels = 4, .kernel_size = 3, .padding = 1}));
    bn = register_module("bn", std::make_shared<nn::BatchNorm2d>(4));
    head = register_module(
        "head", std::make_shared<nn::Sequential>(std::make_shared<nn::Flatten>(), std::make_shared<nn::Dropout>(0.2),
                                                 std::make_shared<nn::Linear>(4 * 4 * 4, 3)));
  }
  Tensor forward(const Tensor& x) override { return head->forward(relu(bn->forward(conv->forward(x)))); }
};

struct Gpt : nn::Module {
  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::TransformerBlock> block;
  Gpt() : nn::Module("Gpt") {
    wte = register_module("wte", std::make_shared<nn::Embedding>(11, 8));
    block = register_module("block",
                            std::make_shared<nn::TransformerBlock>(nn::TransformerOptions{.n_embd = 8, .n_head = 2}));
  }
};

TEST(NnModule, NamedParametersOrderAndNames) {
  Net net;
  EXPECT_EQ(names_of(net.named_parameters()), (std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight",
                                                                        "bn.bias", "head.2.weight", "head.2.bias"}));
  EXPECT_EQ(names_of(net.named_buffers()),
            (std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}));
  auto sd = net.state_dict();
  EXPECT_EQ(sd.size(), 9u);
  auto gpt = std::make_shared<Gpt>();  // named_modules() hands out shared_ptrs, so the root must be shared too
  auto names = names_of(gpt->named_parameters());
  EXPECT_EQ(names[0], "wte.weight");
  EXPECT_EQ(names[3], "block.attn.qkv.weight");
  EXPECT_EQ(names.back(), "block.mlp.2.bias");
  std::vector<std::string> modules;
  for (auto& [name, _] : gpt->named_modules()) modules.push_back(name);
  EXPECT_EQ(modules, (std::vector<std::string>{"", "wte", "block", "block.ln1", "block.attn", "block.attn.qkv",
                                               "block.attn.proj", "block.ln2", "block.mlp", "block.mlp.0",
                                               "block.mlp.1", "block.mlp.2", "block.mlp.3"}));
}

TEST(NnModule, TrainEvalPropagates) {
  auto net = std::make_shared<Net>();
  net->eval();
  for (auto& [name, m] : net->named_modules()) EXPECT_FALSE(m->is_training()) << name;
  net->train();
  for (auto& [name, m] : net->named_modules()) EXPECT_TRUE(m->is_training()) << name;
  net->head->eval();
  EXPECT_TRUE(net->is_training());
  EXPECT_FALSE(net->head->at<nn::Dropout>(1)->is_training());
}

TEST(NnModule, ToFloat64KeepsHandlesValid) {
  manual_seed(100);
  Net net;
  Tensor w = net.conv->weight;  // a handle taken before the move
  auto before = w.to_vector<double>();
  net.to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_TRUE(net.parameters()[0].same(net.conv->weight));
  EXPECT_TRUE(w.same(net.conv->weight));
  EXPECT_EQ(w.to_vector<double>().size(), before.size());
  expect_near_vec(w.to_vector<double>(), before, 1e-7);
  EXPECT_TRUE(w.requires_grad() && w.is_leaf());
  Tensor y = net.forward(randn({2, 1, 4, 4}, kFloat64));
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  net.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(NnModule, StateDictRoundTripGivesIdenticalOutputs) {
  manual_seed(101);
  Net a;
  a.forward(randn({4, 1, 4, 4}));  // moves the running statistics off their defaults
  a.eval();
  manual_seed(999);
  Net b;
  b.eval();
  Tensor x = randn({3, 1, 4, 4});
  EXPECT_GT(testing::max_abs_diff(a.forward(x), b.forward(x)), 1e-3);
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.forward(x).to_vector<double>(), a.forward(x).to_vector<double>());
  EXPECT_EQ(b.bn->num_batches_tracked.item<int64_t>(), 1);
  // A copy, not an alias: changing a afterwards leaves b alone.
  {
    NoGradGuard ng;
    a.conv->weight.add_(1.0);
  }
  EXPECT_GT(testing::max_abs_diff(a.conv->weight, b.conv->weight), 0.5);
}

TEST(NnModule, LoadStateDictNamesBadKeys) {
  nn::StateDict good = Net().state_dict();
  Net net;
  nn::StateDict missing(good.begin() + 1, good.end());
  expect_error([&] { net.load_state_dict(missing); }, {"Net", "missing", "conv.weight"});
  nn::StateDict unexpected = good;
  unexpected.emplace_back("head.3.weight", zeros({2}));
  expect_error([&] { net.load_state_dict(unexpected); }, {"unexpected", "head.3.weight"});
  nn::StateDict misshaped = good;
  for (auto& [name, t] : misshaped)
    if (name == "head.2.weight") t = zeros({3, 5});
  expect_error([&] { net.load_state_dict(misshaped); }, {"shape", "head.2.weight", "[3, 5]", "[3, 64]"});
  net.load_state_dict(missing, /*strict=*/false);  // non-strict skips the missing key
}

TEST(NnModule, ApplyVisitsEveryModule) {
  Net net;
  int linears = 0, total = 0;
  net.apply([&](nn::Module& m) {
    ++total;
    if (auto* fc = dynamic_cast<nn::Linear*>(&m)) {
      ++linears;
      nn::init::zeros_(fc->bias);
    }
  });
  EXPECT_EQ(total, 7);  // Net, conv, bn, head, flatten, dropout, linear
  EXPECT_EQ(linears, 1);
  EXPECT_EQ(net.head->at<nn::Linear>(2)->bias.to_vector<double>(), std::vector<double>(3, 0.0));
}

TEST(NnModule, SharedModuleParametersAreListedOnce) {
  manual_seed(102);
  auto fc = std::make_shared<nn::Linear>(4, 4);
  nn::Sequential twice(fc, std::make_shared<nn::Tanh>(), fc);
  EXPECT_EQ(twice.parameters().size(), 2u);
  EXPECT_EQ(names_of(twice.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  // Gradients from both uses accumulate into the one weight.
  Tensor x = randn({2, 4});
  twice(x).sum().backward();
  Tensor g = fc->weight.grad();
  fc->zero_grad();
  Tensor h = tanh(fc->forward(x));
  Tensor y = fc->forward(h);
  y.sum().backward();
  expect_near_vec(g.to_vector<double>(), fc->weight.grad().to_vector<double>(), 1e-6);
}

TEST(NnModule, ReprShowsTheTree) {
  Net net;
  const std::string r = net.repr();
  EXPECT_NE(r.find("(conv): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"), std::string::npos) << r;
  EXPECT_NE(r.find("(bn): BatchNorm2d(4, eps=1e-05"), std::string::npos) << r;
  EXPECT_NE(r.find("    (2): Linear(in_features=64, out_features=3, bias=True)"), std::string::npos) << r;
}

}  // namespace
}  // namespace anvil
