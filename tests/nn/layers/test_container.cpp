// nn::Sequential and nn::ModuleList: chaining, PyTorch-style child names,
// indexing, errors.
#include <gtest/gtest.h>

#include "nn/layers/activation.h"
#include "nn/layers/container.h"
#include "nn/layers/linear.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::names_of;

TEST(NnSequential, ForwardChainsAndNamesChildrenByPosition) {
  manual_seed(70);
  auto fc1 = std::make_shared<nn::Linear>(4, 8);
  auto fc2 = std::make_shared<nn::Linear>(8, 3);
  auto seq = std::make_shared<nn::Sequential>(fc1, std::make_shared<nn::ReLU>(), fc2);
  EXPECT_EQ(seq->size(), 3u);
  Tensor x = randn({5, 4});
  expect_near_vec(seq->forward(x).to_vector<double>(), fc2->forward(relu(fc1->forward(x))).to_vector<double>(), 1e-6);
  EXPECT_EQ(names_of(seq->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_TRUE((*seq)[0] == fc1);
  EXPECT_TRUE(seq->at<nn::Linear>(2) == fc2);
  expect_error([&] { seq->at<nn::Linear>(1); }, {"Sequential", "module 1 is a ReLU"});
  expect_error([&] { (*seq)[3]; }, {"Sequential", "index 3", "3 modules"});
}

TEST(NnSequential, InitializerListPushBackAndNames) {
  manual_seed(71);
  nn::Sequential seq{std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::Tanh>()};
  auto last = seq.push_back(std::make_shared<nn::Linear>(3, 1));
  static_assert(std::is_same_v<decltype(last), std::shared_ptr<nn::Linear>>);
  seq.push_back("head", std::make_shared<nn::Sigmoid>());
  EXPECT_EQ(seq.size(), 4u);
  std::vector<std::string> children;
  for (auto& [name, _] : seq.named_children()) children.push_back(name);
  EXPECT_EQ(children, (std::vector<std::string>{"0", "1", "2", "head"}));
  Tensor y = seq(randn({6, 2}));
  EXPECT_EQ(y.shape(), (Shape{6, 1}));
  for (double v : y.to_vector<double>()) EXPECT_TRUE(v > 0 && v < 1);
  expect_error([&] { seq.push_back(std::shared_ptr<nn::Module>()); }, {"Sequential", "null"});
  std::string repr = seq.repr();
  EXPECT_NE(repr.find("(0): Linear(in_features=2, out_features=3, bias=True)"), std::string::npos) << repr;
  EXPECT_NE(repr.find("(head): Sigmoid()"), std::string::npos) << repr;
}

TEST(NnSequential, EmptyIsIdentity) {
  nn::Sequential seq;
  Tensor x = randn({2, 2});
  EXPECT_TRUE(seq(x).same(x));
}

struct Stack : nn::Module {
  std::shared_ptr<nn::ModuleList> layers;
  Stack() : nn::Module("Stack") {
    layers = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 3; ++i) layers->push_back(std::make_shared<nn::Linear>(4, 4));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (auto& layer : *layers) h = h + layer->forward(h);  // residual: ModuleList leaves the wiring to us
    return h;
  }
};

TEST(NnModuleList, HoldsModulesWithoutAForward) {
  manual_seed(72);
  auto stack = std::make_shared<Stack>();
  EXPECT_EQ(names_of(stack->named_parameters()),
            (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                                      "layers.2.weight", "layers.2.bias"}));
  Tensor x = randn({2, 4});
  Tensor h = x;
  for (size_t i = 0; i < 3; ++i) h = h + stack->layers->at<nn::Linear>(i)->forward(h);
  expect_near_vec(stack->forward(x).to_vector<double>(), h.to_vector<double>(), 1e-6);
  expect_error([&] { stack->layers->forward(x); }, {"ModuleList"});
}

}  // namespace
}  // namespace anvil
