// What the README shows of custom autograd (Function<T>) and what a libtorch
// port of custom functions, optimizers and schedules looks like: only
// <anvil/anvil.h>, libtorch's spellings with `namespace torch = anvil;`.
#include <anvil/anvil.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/core/gradcheck.h"

namespace torch = anvil;
using anvil::Tensor;

namespace {

using namespace anvil;

// The README's example, verbatim.
struct MulAdd : anvil::autograd::Function<MulAdd> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, Tensor w, double c) {
    ctx->save_for_backward({x, w});
    return x * w + c;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    auto s = ctx->get_saved_variables();
    return {ctx->needs_input_grad(0) ? g[0] * s[1] : Tensor(), g[0] * s[0], Tensor()};  // none for c
  }
};

TEST(ReadmeCustomFunction, TheReadmeExampleWorksFromTheUmbrellaHeader) {
  torch::manual_seed(3);
  Tensor x = torch::randn({3}, torch::kFloat64).requires_grad_(), w = torch::randn({3}, torch::kFloat64);
  Tensor y = MulAdd::apply(x, w, 2.0);
  EXPECT_EQ(y.grad_fn()->name(), "(anonymous namespace)::MulAdd");
  EXPECT_TRUE(
      anvil::testing::gradcheck([&](const std::vector<Tensor>& in) { return MulAdd::apply(in[0], in[1], 2.0); },
                                {torch::randn({2, 3}, torch::kFloat64), torch::randn({2, 3}, torch::kFloat64)}));
}

// libtorch's custom function habits: torch::autograd::Function, AutogradContext, variable_list.
struct Square : public torch::autograd::Function<Square> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, torch::Tensor input) {
    ctx->save_for_backward({input});
    ctx->saved_data["scale"] = 2;
    return {input * input};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto input = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * ctx->saved_data["scale"].toInt() * input};
  }
};

TEST(ReadmeCustomFunction, LibtorchSpelling) {
  torch::Tensor x = torch::randn({4}, torch::kFloat64).requires_grad_(true);
  auto out = Square::apply(x);
  out[0].sum().backward();
  EXPECT_LT(anvil::testing::max_abs_diff(x.grad(), x.detach() * 2.0), 1e-12);
}

TEST(ReadmeOptim, OptimizersAndSchedulesAsLibtorchSpellsThem) {
  torch::manual_seed(1);
  auto model = std::make_shared<torch::nn::Linear>(3, 1);
  torch::Tensor x = torch::randn({16, 3}), y = torch::randn({16, 1});
  auto loss_fn = [&] { return torch::mse_loss(model->forward(x), y); };
  const double start = loss_fn().item<double>();

  torch::optim::RMSprop rmsprop(model->parameters(), torch::optim::RMSpropOptions(0.01).alpha(0.9).momentum(0.5));
  torch::optim::StepLR decay(rmsprop, {.step_size = 5, .gamma = 0.5});
  for (int i = 0; i < 10; ++i) {
    rmsprop.zero_grad();
    loss_fn().backward();
    rmsprop.step();
    decay.step();
  }
  EXPECT_NEAR(rmsprop.lr(), 0.01 * 0.25, 1e-15);

  torch::optim::LBFGS lbfgs(model->parameters(),
                            torch::optim::LBFGSOptions(1).max_iter(20).line_search_fn("strong_wolfe"));
  auto closure = [&] {
    lbfgs.zero_grad();
    torch::Tensor loss = loss_fn();
    loss.backward();
    return loss;
  };
  for (int i = 0; i < 3; ++i) lbfgs.step(closure);
  EXPECT_LT(loss_fn().item<double>(), start);

  torch::optim::Adagrad adagrad(model->parameters(), torch::optim::AdagradOptions(0.1).lr_decay(0.01));
  torch::optim::Adamax adamax(model->parameters(), torch::optim::AdamaxOptions(2e-3).betas({0.9, 0.99}));
  torch::optim::NAdam nadam(model->parameters(), torch::optim::NAdamOptions(2e-3));
  torch::optim::RAdam radam(model->parameters(), torch::optim::RAdamOptions(1e-3).weight_decay(0.01));
  torch::optim::Lion lion(model->parameters(), torch::optim::LionOptions(1e-4).weight_decay(0.1));
  EXPECT_EQ(adagrad.name() + adamax.name() + nadam.name() + radam.name() + lion.name(), "AdagradAdamaxNAdamRAdamLion");
}

}  // namespace
