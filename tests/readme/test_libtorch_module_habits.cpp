// Issue 14's porting test: the modules, optimizers, schedules, clipping,
// custom autograd, autocast and Trainer features of
// libtorch_module_oneliners.txt, each written as libtorch (or PyTorch and
// Lightning, where libtorch has none) spells it and checked for its result:
// output shapes and a numeric property of each module, each optimizer's
// step, each schedule's lr sequence against PyTorch's closed form, and the
// Trainer's files on disk. Only <anvil/anvil.h> is included, as in a port.
#include <anvil/anvil.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <numbers>
#include <set>
#include <string>
#include <vector>

namespace torch = anvil;  // the port
namespace F = torch::nn::functional;

namespace {

using torch::Tensor;
namespace fs = std::filesystem;

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

// ---- modules ----

TEST(LibtorchModuleHabits, MultiheadAttentionWithBiasKvZeroAttnAndPositionalMasks) {
  torch::manual_seed(1);
  auto mha = std::make_shared<torch::nn::MultiheadAttention>(
      torch::nn::MultiheadAttentionOptions(16, 4).add_bias_kv(true).add_zero_attn(true));
  mha->eval();
  const Tensor q = torch::randn({5, 2, 16}), k = torch::randn({7, 2, 16});  // [L, N, E], PyTorch's default layout
  auto [out, weights] = mha->forward(q, k, k);
  EXPECT_EQ(out.sizes(), (torch::Shape{5, 2, 16}));
  EXPECT_EQ(weights.sizes(), (torch::Shape{2, 5, 9}));  // S + bias_k + the zero key
  EXPECT_LT(max_diff(weights.sum(-1), torch::ones({2, 5})), 1e-5);
  // libtorch's positional key_padding_mask / need_weights / attn_mask give the options form's result.
  Tensor padding = torch::zeros({2, 7}, torch::kBool);
  padding[0].narrow(0, 4, 3).fill_(true);
  const Tensor causal = torch::triu(torch::ones({5, 7}, torch::kBool), 1);
  auto [positional, none] = mha->forward(q, k, k, padding, false, causal);
  EXPECT_FALSE(none.defined());
  const Tensor want =
      mha->forward(q, k, k, torch::nn::MHAForwardOptions().key_padding_mask(padding).attn_mask(causal)).first;
  EXPECT_LT(max_diff(positional, want), 1e-6);
  EXPECT_GT(max_diff(positional, out), 1e-4);  // the masks changed it
}

TEST(LibtorchModuleHabits, NormsNormalise) {
  torch::manual_seed(2);
  auto bn = std::make_shared<torch::nn::BatchNorm1d>(
      torch::nn::BatchNorm1dOptions(6).eps(1e-5).momentum(0.1).affine(true).track_running_stats(true));
  const Tensor x = torch::randn({32, 6}) * 3 + 2;
  const Tensor y = bn->forward(x);
  EXPECT_LT(y.mean(0).abs().max().item<double>(), 1e-5);
  EXPECT_LT((torch::var(y, 0, /*unbiased=*/false) - 1).abs().max().item<double>(), 1e-3);
  EXPECT_LT(max_diff(bn->running_mean, x.mean(0) * 0.1), 1e-5);  // momentum 0.1 from zeros

  auto gn = std::make_shared<torch::nn::GroupNorm>(torch::nn::GroupNormOptions(2, 8).eps(1e-5).affine(true));
  const Tensor img = torch::randn({3, 8, 4, 4}) + 5;
  const Tensor g = gn->forward(img).reshape({3, 2, -1});
  EXPECT_EQ(gn->forward(img).sizes(), img.sizes());
  EXPECT_LT(g.mean(-1).abs().max().item<double>(), 1e-4);

  auto rms = std::make_shared<torch::nn::RMSNorm>(torch::nn::RMSNormOptions({16}).eps(1e-6));
  const Tensor r = rms->forward(torch::randn({4, 16}) * 7);
  EXPECT_LT(((r * r).mean(-1) - 1).abs().max().item<double>(), 1e-4);
}

TEST(LibtorchModuleHabits, ConvolutionsMatchTheirFunctionalForms) {
  torch::manual_seed(3);
  auto conv = std::make_shared<torch::nn::Conv1d>(torch::nn::Conv1dOptions(3, 8, 3).stride(1).padding(1).bias(false));
  const Tensor seq = torch::randn({2, 3, 10});
  const Tensor c = conv->forward(seq);
  EXPECT_EQ(c.sizes(), (torch::Shape{2, 8, 10}));
  EXPECT_LT(max_diff(c, F::conv1d(seq, conv->weight, F::Conv1dFuncOptions().padding(1))), 1e-5);

  auto deconv = std::make_shared<torch::nn::ConvTranspose2d>(
      torch::nn::ConvTranspose2dOptions(3, 8, 4).stride(2).padding(1).output_padding(0));
  const Tensor img = torch::randn({2, 3, 5, 5});
  const Tensor d = deconv->forward(img);
  EXPECT_EQ(d.sizes(), (torch::Shape{2, 8, 10, 10}));  // (5 - 1) * 2 - 2 + 4
  const Tensor want = F::conv_transpose2d(img, deconv->weight, F::ConvTranspose2dFuncOptions().stride(2).padding(1)) +
                      deconv->bias.view({1, 8, 1, 1});
  EXPECT_LT(max_diff(d, want), 1e-5);
}

TEST(LibtorchModuleHabits, RecurrentLayersReturnOutputsAndStates) {
  torch::manual_seed(4);
  auto lstm = std::make_shared<torch::nn::LSTM>(
      torch::nn::LSTMOptions(6, 8).num_layers(2).batch_first(true).dropout(0.1).bidirectional(true));
  lstm->eval();
  const Tensor seq = torch::randn({3, 5, 6});
  auto [out, state] = lstm->forward(seq);
  auto [h_n, c_n] = state;
  EXPECT_EQ(out.sizes(), (torch::Shape{3, 5, 16}));
  EXPECT_EQ(h_n.sizes(), (torch::Shape{4, 3, 8}));
  EXPECT_EQ(c_n.sizes(), (torch::Shape{4, 3, 8}));
  // The last layer's forward direction ends at the last step, its backward one at the first.
  EXPECT_LT(max_diff(out.select(1, 4).narrow(1, 0, 8), h_n[2]), 1e-6);
  EXPECT_LT(max_diff(out.select(1, 0).narrow(1, 8, 8), h_n[3]), 1e-6);

  auto gru = std::make_shared<torch::nn::GRU>(torch::nn::GRUOptions(6, 8).num_layers(2).batch_first(true));
  auto [y, h] = gru->forward(seq);
  EXPECT_EQ(y.sizes(), (torch::Shape{3, 5, 8}));
  EXPECT_LT(max_diff(y.select(1, 4), h[1]), 1e-6);
}

TEST(LibtorchModuleHabits, IdentityUpsampleAndPixelShuffleMoveValuesWhereTorchDoes) {
  torch::manual_seed(5);
  const Tensor x = torch::randn({2, 3});
  EXPECT_EQ(max_diff(std::make_shared<torch::nn::Identity>()->forward(x), x), 0.0);
  const Tensor img = torch::randn({1, 4, 2, 2});
  auto up = std::make_shared<torch::nn::Upsample>(
      torch::nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest));
  const Tensor u = up->forward(img);
  EXPECT_EQ(u.sizes(), (torch::Shape{1, 4, 4, 4}));
  EXPECT_EQ(u[0][1][3][2].item<float>(), img[0][1][1][1].item<float>());
  auto bilinear = std::make_shared<torch::nn::Upsample>(
      torch::nn::UpsampleOptions().size(std::vector<int64_t>{8, 8}).mode(torch::kBilinear).align_corners(false));
  EXPECT_EQ(bilinear->forward(img).sizes(), (torch::Shape{1, 4, 8, 8}));
  auto ps = std::make_shared<torch::nn::PixelShuffle>(torch::nn::PixelShuffleOptions(2));
  const Tensor p = ps->forward(img);
  EXPECT_EQ(p.sizes(), (torch::Shape{1, 1, 4, 4}));
  // out[c, 2h + i, 2w + j] = in[4c + 2i + j, h, w]
  EXPECT_EQ(p[0][0][0][1].item<float>(), img[0][1][0][0].item<float>());
  EXPECT_EQ(p[0][0][3][2].item<float>(), img[0][2][1][1].item<float>());
  auto model = std::make_shared<torch::nn::Sequential>(std::make_shared<torch::nn::Linear>(3, 2));
  model->push_back(std::make_shared<torch::nn::Identity>());
  EXPECT_EQ(model->size(), 2u);
}

// ---- optimizers and clipping ----

// Least squares: a Linear(4, 1) fitted to a random target; the loss after `steps` steps.
template <class MakeOptimizer> std::pair<double, double> fit(MakeOptimizer make, int steps) {
  torch::manual_seed(6);
  auto model = std::make_shared<torch::nn::Sequential>(std::make_shared<torch::nn::Linear>(4, 1));
  const Tensor x = torch::randn({32, 4}), y = torch::randn({32, 1});
  auto opt = make(model->parameters());
  auto loss = [&] { return F::mse_loss(model->forward(x), y); };
  const double before = loss().template item<double>();
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    loss().backward();
    opt.step();
  }
  return {before, loss().template item<double>()};
}

TEST(LibtorchModuleHabits, EveryOptimizerAsLibtorchSpellsItLowersTheLoss) {
  using P = std::vector<Tensor>;
  std::vector<std::pair<std::string, std::pair<double, double>>> runs{
      {"SGD", fit(
                  [](P p) {
                    return torch::optim::SGD(
                        p, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4));
                  },
                  20)},
      {"Adam", fit(
                   [](P p) {
                     return torch::optim::Adam(
                         p, torch::optim::AdamOptions(1e-2).betas(std::make_tuple(0.9, 0.98)).eps(1e-8));
                   },
                   20)},
      {"AdamW",
       fit([](P p) { return torch::optim::AdamW(p, torch::optim::AdamWOptions(1e-2).weight_decay(0.01)); }, 20)},
      {"RMSprop", fit(
                      [](P p) {
                        return torch::optim::RMSprop(
                            p, torch::optim::RMSpropOptions(0.01).alpha(0.99).momentum(0.9).centered(true));
                      },
                      20)},
      {"Adagrad", fit(
                      [](P p) {
                        return torch::optim::Adagrad(
                            p, torch::optim::AdagradOptions(0.1).lr_decay(1e-3).initial_accumulator_value(0.1));
                      },
                      20)},
      {"Adamax",
       fit([](P p) { return torch::optim::Adamax(p, torch::optim::AdamaxOptions(2e-2).weight_decay(0.01)); }, 20)},
      {"NAdam",
       fit([](P p) { return torch::optim::NAdam(p, torch::optim::NAdamOptions(2e-2).momentum_decay(4e-3)); }, 20)},
      {"RAdam",
       fit([](P p) { return torch::optim::RAdam(p, torch::optim::RAdamOptions(1e-2).weight_decay(0.01)); }, 20)},
      {"Lion", fit([](P p) { return torch::optim::Lion(p, torch::optim::LionOptions(1e-2).weight_decay(0.01)); }, 20)},
  };
  for (const auto& [name, r] : runs)
    EXPECT_LT(r.second, 0.9 * r.first) << name << ": " << r.first << " -> " << r.second;

  // libtorch's param_groups()[g].options() reads and writes the group's lr.
  {
    auto lin = std::make_shared<torch::nn::Linear>(3, 1);
    torch::optim::SGD opt(lin->parameters(), 0.1);
    EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
    opt.param_groups()[0].options().set_lr(0.01);
    EXPECT_DOUBLE_EQ(opt.lr(), 0.01);
    EXPECT_EQ(opt.param_groups()[0].params().size(), 2u);
  }
  // amsgrad(false) is Adam as written; amsgrad(true) keeps max_exp_avg_sq.
  {
    auto lin = std::make_shared<torch::nn::Linear>(3, 1);
    torch::optim::AdamW ok(lin->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.01).amsgrad(false));
    torch::optim::Adam ams(lin->parameters(), torch::optim::AdamOptions(1e-3).amsgrad(true));
    const Tensor before = lin->weight.detach().clone();
    lin->forward(torch::randn({4, 3})).sum().backward();
    ams.step();
    EXPECT_GT((lin->weight.detach() - before).abs().max().item<double>(), 0.0);
    EXPECT_EQ(ams.state_of(lin->weight)->buffers.count("max_exp_avg_sq"), 1u);
  }
  // libtorch's SGD(params, lr): one step is p - lr * grad exactly.
  auto lin = std::make_shared<torch::nn::Linear>(3, 1);
  torch::optim::SGD sgd(lin->parameters(), /*lr=*/0.01);
  const Tensor x = torch::randn({5, 3});
  lin->forward(x).sum().backward();
  const Tensor w0 = lin->weight.detach().clone(), g = lin->weight.grad().clone();
  sgd.step();
  EXPECT_LT(max_diff(lin->weight, w0 - 0.01 * g), 1e-7);

  // LBFGS with a closure solves least squares.
  torch::manual_seed(7);
  auto model = std::make_shared<torch::nn::Sequential>(std::make_shared<torch::nn::Linear>(4, 1));
  const Tensor a = torch::randn({32, 4}), b = torch::randn({32, 1});
  torch::optim::LBFGS lbfgs(model->parameters(),
                            torch::optim::LBFGSOptions(1).max_iter(50).history_size(10).line_search_fn("strong_wolfe"));
  auto closure = [&] {
    lbfgs.zero_grad();
    auto l = F::mse_loss(model->forward(a), b);
    l.backward();
    return l;
  };
  const double first = lbfgs.step(closure).item<double>();
  // The least-squares optimum, from the normal equations.
  const Tensor design = torch::cat({a, torch::ones({32, 1})}, 1);
  const Tensor beta = torch::linalg::solve(torch::matmul(design.t(), design), torch::matmul(design.t(), b), true);
  const double optimum = F::mse_loss(torch::matmul(design, beta), b).item<double>();
  const double after = closure().item<double>();
  EXPECT_LT(after, first);
  EXPECT_NEAR(after, optimum, 1e-4);
}

TEST(LibtorchModuleHabits, ClipGradValueAndNormAsTorchNnUtils) {
  auto lin = std::make_shared<torch::nn::Linear>(4, 3);
  (lin->forward(torch::randn({8, 4})) * 100).sum().backward();
  const Tensor g = lin->weight.grad().clone();
  ASSERT_GT(g.abs().max().item<double>(), 0.5);
  torch::nn::utils::clip_grad_value_(lin->parameters(), 0.5);
  EXPECT_LT(max_diff(lin->weight.grad(), g.clamp(-0.5, 0.5)), 1e-7);
  EXPECT_LE(lin->bias.grad().abs().max().item<double>(), 0.5);
  const double norm = torch::nn::utils::clip_grad_norm_(lin->parameters(), 0.1);
  EXPECT_GT(norm, 0.1);
  const double after =
      std::sqrt(lin->weight.grad().pow(2).sum().item<double>() + lin->bias.grad().pow(2).sum().item<double>());
  EXPECT_NEAR(after, 0.1, 1e-5);
}

// ---- schedules: the lr of each of the first `n` steps against PyTorch's closed form ----

template <class Formula> void expect_lrs(const std::vector<double>& got, Formula want) {
  for (size_t t = 0; t < got.size(); ++t) EXPECT_NEAR(got[t], want(static_cast<int64_t>(t)), 1e-12) << "step " << t;
}
// The lr in effect at t = 0, 1, ..., n - 1 (step() after each optimizer step).
template <class Sched> std::vector<double> lrs(torch::optim::Optimizer& opt, Sched& sched, int n) {
  std::vector<double> out;
  for (int t = 0; t < n; ++t) {
    out.push_back(opt.lr());
    opt.step();
    sched.step();
  }
  return out;
}

TEST(LibtorchModuleHabits, SchedulesFollowPyTorchsClosedForms) {
  auto model = std::make_shared<torch::nn::Linear>(2, 1);
  const int n = 12;
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    torch::optim::StepLR sched(opt, /*step_size=*/3, /*gamma=*/0.5);
    expect_lrs(lrs(opt, sched, n), [](int64_t t) { return 0.1 * std::pow(0.5, t / 3); });
  }
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    torch::optim::LambdaLR sched(opt, [](int64_t epoch) { return std::pow(0.95, epoch); });
    expect_lrs(lrs(opt, sched, n), [](int64_t t) { return 0.1 * std::pow(0.95, t); });
  }
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    torch::optim::MultiStepLR sched(opt, /*milestones=*/{3, 7}, /*gamma=*/0.1);
    expect_lrs(lrs(opt, sched, n), [](int64_t t) { return 0.1 * std::pow(0.1, (t >= 3) + (t >= 7)); });
  }
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    torch::optim::ExponentialLR sched(opt, /*gamma=*/0.9);
    expect_lrs(lrs(opt, sched, n), [](int64_t t) { return 0.1 * std::pow(0.9, t); });
  }
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    auto warm =
        std::make_shared<torch::optim::LinearWarmupLR>(opt, torch::optim::LinearWarmupLROptions{.warmup_steps = 3});
    auto decay = std::make_shared<torch::optim::ExponentialLR>(opt, 0.9);
    torch::optim::SequentialLR sched(opt, {warm, decay}, {3});
    expect_lrs(lrs(opt, sched, n), [](int64_t t) { return t < 3 ? 0.1 * t / 3.0 : 0.1 * std::pow(0.9, t - 3); });
  }
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    auto a = std::make_shared<torch::optim::ExponentialLR>(opt, 0.9);
    auto b = std::make_shared<torch::optim::StepLR>(opt, 2, 0.5);
    torch::optim::ChainedScheduler sched(opt, {a, b});
    expect_lrs(lrs(opt, sched, n), [](int64_t t) { return 0.1 * std::pow(0.9, t) * std::pow(0.5, t / 2); });
  }
  {
    torch::optim::SGD opt(model->parameters(), 0.1);
    torch::optim::CosineAnnealingLR sched(opt, {.total_steps = 10});
    expect_lrs(lrs(opt, sched, 11), [](int64_t t) { return 0.05 * (1 + std::cos(std::numbers::pi * t / 10.0)); });
  }
  {
    // ReduceLROnPlateau(mode="min", factor=0.5, patience=2): PyTorch halves the
    // lr on the third epoch in a row without improvement, then counts again.
    torch::optim::SGD opt(model->parameters(), 0.1);
    torch::optim::ReduceLROnPlateau sched(opt, {.factor = 0.5, .patience = 2});
    std::vector<double> got;
    for (double metric : {1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}) {
      sched.step(metric);
      got.push_back(opt.lr());
    }
    const std::vector<double> want{0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025};
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "epoch " << i;
    // libtorch's ReduceLROnPlateauScheduler(optimizer, mode, factor, patience) does the same.
    torch::optim::SGD opt2(model->parameters(), 0.1);
    torch::optim::ReduceLROnPlateauScheduler positional(
        opt2, torch::optim::ReduceLROnPlateauScheduler::SchedulerMode::min, 0.5, 2);
    size_t i = 0;
    for (double metric : {1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}) {
      positional.step(metric);
      EXPECT_NEAR(opt2.lr(), want[i], 1e-8) << "epoch " << i;
      ++i;
    }
    // mode max: a falling metric is no improvement.
    torch::optim::SGD opt3(model->parameters(), 0.1);
    torch::optim::ReduceLROnPlateauScheduler maximise(opt3, torch::optim::ReduceLROnPlateauScheduler::max, 0.5, 0);
    maximise.step(1.0);
    maximise.step(0.5);
    EXPECT_NEAR(opt3.lr(), 0.05, 1e-8);
  }
  // Bad input names the schedule.
  torch::optim::SGD opt(model->parameters(), 0.1);
  try {
    torch::optim::StepLR bad(opt, 0, 0.5);
    ADD_FAILURE() << "no error";
  } catch (const torch::Error& e) {
    EXPECT_NE(std::string(e.what()).find("StepLR: step_size must be > 0, got 0"), std::string::npos) << e.what();
  }
}

// ---- custom autograd and autocast ----

struct Square : torch::autograd::Function<Square> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor t) {
    ctx->save_for_backward({t});
    return t * t;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    auto s = ctx->get_saved_variables();
    return {2 * s[0] * g[0]};
  }
};

TEST(LibtorchModuleHabits, CustomFunctionAndAutocast) {
  const Tensor x = torch::randn({5}).requires_grad_(true);
  const Tensor y = Square::apply(x);
  EXPECT_LT(max_diff(y, x.detach() * x.detach()), 1e-7);
  y.sum().backward();
  EXPECT_LT(max_diff(x.grad(), 2 * x.detach()), 1e-6);

  const Tensor a = torch::randn({4, 8}), w = torch::randn({3, 8});
  EXPECT_FALSE(torch::autocast::is_enabled());
  {
    torch::AutocastGuard autocast(torch::kBFloat16);
    EXPECT_TRUE(torch::autocast::is_enabled());
    const Tensor h = F::linear(a, w);
    EXPECT_EQ(h.scalar_type(), torch::kBFloat16);  // matmul-like ops in low precision
    EXPECT_EQ(h.softmax(-1).scalar_type(), torch::kFloat);  // softmax in float32
    EXPECT_LT(max_diff(h, torch::matmul(a, w.t())), 0.1 * torch::matmul(a, w.t()).abs().max().item<double>());
  }
  EXPECT_FALSE(torch::autocast::is_enabled());
  EXPECT_EQ(F::linear(a, w).scalar_type(), torch::kFloat);
}

// ---- the Trainer, as Lightning's ----

// A module whose forward takes (x, mask), trained from tuple or map batches.
struct MaskedNet : torch::nn::Module {
  std::shared_ptr<torch::nn::Linear> fc = register_module("fc", std::make_shared<torch::nn::Linear>(4, 2));
  MaskedNet() : torch::nn::Module("MaskedNet") {}
  Tensor forward_inputs(const std::vector<Tensor>& in) override { return fc->forward(in[0] * in[1]); }
};
struct TupleTask : torch::nn::train::Task {
  std::shared_ptr<MaskedNet> net = std::make_shared<MaskedNet>();
  std::shared_ptr<torch::nn::Module> model() override { return net; }
  torch::nn::train::StepOutput training_step(const torch::nn::data::Example& b) override {
    return {F::cross_entropy((*net)(b[0], b[1]), b[2])};
  }
  torch::nn::train::Metrics validation_step(const torch::nn::data::Example& b) override {
    return {{"loss", F::cross_entropy((*net)(b[0], b[1]), b[2]).item<double>()}};
  }
};
struct MapTask : TupleTask {
  torch::nn::train::StepOutput training_step(const torch::nn::data::Example& b) override {
    return {F::cross_entropy((*net)(b["x"], b["mask"]), b["y"])};
  }
  torch::nn::train::Metrics validation_step(const torch::nn::data::Example& b) override {
    return {{"loss", F::cross_entropy((*net)(b["x"], b["mask"]), b["y"]).item<double>()}};
  }
};

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("anvil_module_habits_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                   std::to_string(reinterpret_cast<uintptr_t>(this)));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

TEST(LibtorchModuleHabits, TrainerWithMaxStepsCheckpointsLrMonitorTensorBoardAndTupleBatches) {
  torch::manual_seed(8);
  const Tensor x = torch::randn({64, 4}), mask = (torch::rand({64, 4}) > 0.3).to(torch::kFloat);
  const Tensor y = ((x * mask).sum(1) > 0).to(torch::kLong);
  auto set = std::make_shared<torch::nn::data::TensorTupleDataset>(std::vector<Tensor>{x, mask, y});
  torch::nn::data::DataLoader loader(set, torch::nn::data::DataLoaderOptions().batch_size(16));  // 4 batches an epoch
  TempDir dir;
  TupleTask task;
  torch::optim::SGD opt(task.net->parameters(), 0.5);
  // Trainer(max_epochs=5, max_steps=14, callbacks=[...], logger=TensorBoardLogger(...)).
  torch::nn::train::Trainer trainer({.max_epochs = 5,
                                     .max_steps = 14,
                                     .device = torch::Device(torch::kCPU),
                                     .log_every_n_steps = 1,
                                     .tensorboard_dir = (dir.path / "tb").string(),
                                     .progress = torch::nn::train::ProgressMode::Off,
                                     .print_report = false});
  auto ckpt = std::make_shared<torch::nn::train::ModelCheckpoint>(
      torch::nn::train::ModelCheckpointOptions{.dirpath = (dir.path / "ckpt").string(),
                                               .filename = "{epoch}",
                                               .monitor = "val_loss",
                                               .mode = torch::nn::train::MonitorMode::Min,
                                               .save_top_k = 2,
                                               .save_last = true});
  auto lr_monitor =
      std::make_shared<torch::nn::train::LearningRateMonitor>(torch::nn::train::LearningRateMonitorOptions{
          .logging_interval = torch::nn::train::LearningRateMonitorOptions::Interval::Step});
  trainer.add_callback(ckpt);
  trainer.add_callback(lr_monitor);
  const auto result = trainer.fit(task, loader, &loader, opt);

  EXPECT_EQ(trainer.global_step(), 14);  // max_steps stops it inside the fourth epoch
  EXPECT_EQ(result.step_losses.size(), 14u);
  EXPECT_LT(result.step_losses.back(), result.step_losses.front());
  // ModelCheckpoint: the two best epochs by val_loss, and last.
  const std::set<std::string> files = files_in(dir.path / "ckpt");
  EXPECT_EQ(files.size(), 3u);
  EXPECT_TRUE(files.count("last.safetensors"));
  EXPECT_EQ(ckpt->best_k_models().size(), 2u);
  for (const auto& [path, score] : ckpt->best_k_models()) {
    EXPECT_TRUE(fs::exists(path)) << path;
    EXPECT_EQ(fs::path(path).filename().string().rfind("epoch=", 0), 0u) << path;
    EXPECT_GE(score, ckpt->best_model_score());
  }
  EXPECT_TRUE(fs::exists(ckpt->best_model_path()));
  // LearningRateMonitor: the lr of every step.
  ASSERT_TRUE(lr_monitor->lrs().count("lr-SGD"));
  EXPECT_EQ(lr_monitor->lrs().at("lr-SGD").size(), 14u);
  EXPECT_DOUBLE_EQ(lr_monitor->lrs().at("lr-SGD").front(), 0.5);
  // TensorBoard: an event file tensorboard reads.
  bool events = false;
  for (const std::string& f : files_in(dir.path / "tb")) events |= f.rfind("events.out.tfevents.", 0) == 0;
  EXPECT_TRUE(events) << "no events.out.tfevents.* in " << (dir.path / "tb");

  // The same model from map batches.
  auto named = std::make_shared<torch::nn::data::TensorMapDataset>(
      std::map<std::string, Tensor>{{"x", x}, {"mask", mask}, {"y", y}});
  torch::nn::data::DataLoader map_loader(named, torch::nn::data::DataLoaderOptions().batch_size(16));
  MapTask map_task;
  torch::optim::SGD map_opt(map_task.net->parameters(), 0.5);
  torch::nn::train::Trainer map_trainer({.max_steps = 6,
                                         .device = torch::Device(torch::kCPU),
                                         .progress = torch::nn::train::ProgressMode::Off,
                                         .print_report = false});
  const auto map_result = map_trainer.fit(map_task, map_loader, map_opt);
  EXPECT_EQ(map_trainer.global_step(), 6);  // max_steps alone: no epoch limit
  EXPECT_LT(map_result.step_losses.back(), map_result.step_losses.front());
}

}  // namespace
