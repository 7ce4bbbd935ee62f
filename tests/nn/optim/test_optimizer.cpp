// The Optimizer base: parameter groups, zero_grad, lr access, state_dict
// round trips and the errors for bad parameters and mismatched states.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>

#include "nn/optim/optim.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

void expect_error(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Optimizer, GroupsUseTheirOwnLearningRates) {
  manual_seed(1);
  Tensor body = random_param({4}), head = random_param({3});
  SGDOptions base{.lr = 0.1};
  SGDOptions head_options = base;
  head_options.lr = 0.01;
  SGD opt({SGD::Group{{body}}, ParamGroup{std::vector<Tensor>{head}, head_options}}, base);
  ASSERT_EQ(opt.num_param_groups(), 2u);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(opt.lr(1), 0.01);
  Vec pb = values(body), ph = values(head);
  const Vec gb = set_random_grad(body), gh = set_random_grad(head);
  opt.step();
  for (size_t i = 0; i < pb.size(); ++i) pb[i] -= 0.1 * gb[i];
  for (size_t i = 0; i < ph.size(); ++i) ph[i] -= 0.01 * gh[i];
  expect_near(values(body), pb, 1e-15, "body");
  expect_near(values(head), ph, 1e-15, "head");
}

TEST(Optimizer, AddParamGroupTakesDefaultsOrItsOwnOptions) {
  manual_seed(2);
  Tensor a = random_param({2}), b = random_param({2}), c = random_param({2});
  AdamW opt({a}, {.lr = 0.1, .weight_decay = 0.5});
  opt.add_param_group({{b}});
  opt.add_param_group({{c}, AdamWOptions{.lr = 0.2, .weight_decay = 0.0}});
  ASSERT_EQ(opt.num_param_groups(), 3u);
  EXPECT_DOUBLE_EQ(opt.options(1).lr, 0.1);
  EXPECT_DOUBLE_EQ(opt.options(1).weight_decay, 0.5);
  EXPECT_DOUBLE_EQ(opt.options(2).lr, 0.2);
  EXPECT_DOUBLE_EQ(opt.options(2).weight_decay, 0.0);
  EXPECT_EQ(opt.parameters().size(), 3u);
  EXPECT_TRUE(opt.params(2)[0].same(c));
  // The new group is stepped: one AdamW step moves each element by lr (eps aside).
  const Vec before = values(c), g = set_random_grad(c);
  opt.step();
  const Vec after = values(c);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(after[i], before[i] - 0.2 * (g[i] > 0 ? 1 : -1), 1e-6);
}

TEST(Optimizer, SetLrChangesOneOrAllGroups) {
  Tensor a = random_param({2}), b = random_param({2});
  SGD opt({SGD::Group{{a}}, SGD::Group{{b}}}, {.lr = 0.1});
  opt.set_lr(1, 0.5);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(opt.lr(1), 0.5);
  opt.set_lr(0.25);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.25);
  EXPECT_DOUBLE_EQ(opt.lr(1), 0.25);
  expect_error([&] { opt.set_lr(2, 0.1); }, "parameter group 2 does not exist (there are 2)");
  expect_error([&] { opt.set_lr(0, -0.1); }, "invalid learning rate");
  const HyperParams hp = opt.hyper_params(1);
  ASSERT_FALSE(hp.empty());
  EXPECT_EQ(hp[0].first, "lr");
  EXPECT_DOUBLE_EQ(hp[0].second, 0.25);
}

TEST(Optimizer, StepSkipsParametersWithoutGradient) {
  manual_seed(3);
  Tensor a = random_param({3}), b = random_param({3});
  SGD opt({a, b}, {.lr = 0.1, .momentum = 0.9});
  const Vec b_before = values(b);
  set_random_grad(a);
  opt.step();
  EXPECT_EQ(values(b), b_before);
  EXPECT_EQ(opt.state_of(b), nullptr);
  ASSERT_NE(opt.state_of(a), nullptr);
}

TEST(Optimizer, MixedDtypesInOneGroupAreBatchedSeparately) {
  // float32 and float64 parameters need separate backend calls; a gradient
  // of another dtype is cast to the parameter's.
  manual_seed(12);
  Tensor a = random_param({3}, kFloat32), b = random_param({4}, kFloat64);
  AdamW opt({a, b}, {.lr = 0.1, .weight_decay = 0.0});
  const Vec pa = values(a), pb = values(b);
  const Vec ga = set_random_grad(a);
  Tensor gb32 = randn({4}, kFloat32);
  b.set_grad(gb32);
  const Vec gb = values(gb32);
  opt.step();
  // One AdamW step with eps ~ 0 moves every element by lr against its gradient's sign.
  auto expected = [](Vec p, const Vec& g) {
    for (size_t i = 0; i < p.size(); ++i) p[i] -= 0.1 * (g[i] > 0 ? 1 : -1);
    return p;
  };
  expect_near(values(a), expected(pa, ga), 1e-6, "float32");
  expect_near(values(b), expected(pb, gb), 1e-6, "float64");
  EXPECT_EQ(opt.state_of(a)->buffers.at("exp_avg").dtype(), kFloat32);
  EXPECT_EQ(opt.state_of(b)->buffers.at("exp_avg").dtype(), kFloat64);
}

TEST(Optimizer, StepBumpsVersionCounters) {
  Tensor a = random_param({3});
  SGD opt({a}, {.lr = 0.1});
  set_random_grad(a);
  const uint64_t before = a.version();
  opt.step();
  EXPECT_GT(a.version(), before);
}

TEST(Optimizer, ZeroGradFreesOrZeroesGradients) {
  Tensor a = random_param({3});
  SGD opt({a}, {.lr = 0.1});
  set_random_grad(a);
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(values(a.grad()), Vec(3, 0.0));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, NonContiguousParameterIsUpdatedInPlace) {
  manual_seed(4);
  Tensor base = randn({3, 4}, kFloat64);
  Tensor p = base.t().detach();  // a transposed leaf: strides (1, 4)
  p.requires_grad_(true);
  ASSERT_FALSE(p.is_contiguous());
  SGD opt({p}, {.lr = 0.1});
  Vec expected = values(p);
  const Vec g = set_random_grad(p);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] -= 0.1 * g[i];
  opt.step();
  expect_near(values(p), expected, 1e-15);
  expect_near(values(base.t()), expected, 1e-15, "shared storage");
}

TEST(Optimizer, GradientsFromBackwardAreUsed) {
  // loss = sum(p^2) / 2 has gradient p: one SGD step with lr 0.25 scales p by 0.75.
  manual_seed(6);
  Tensor p = random_param({5});
  const Vec before = values(p);
  SGD opt({p}, {.lr = 0.25});
  (sum(square(p)) * 0.5).backward();
  opt.step();
  Vec expected = before;
  for (double& x : expected) x *= 0.75;
  expect_near(values(p), expected, 1e-15);
}

// ----------------------------------------------------------------- errors

TEST(OptimizerErrors, ParameterThatDoesNotRequireGrad) {
  Tensor frozen = randn({2}, kFloat64);
  expect_error([&] { SGD({frozen}, {.lr = 0.1}); }, "does not require grad");
}

TEST(OptimizerErrors, ParameterInTwoGroups) {
  Tensor a = random_param({2}), b = random_param({2});
  expect_error([&] { SGD({SGD::Group{{a, b}}, SGD::Group{{b}}}, {.lr = 0.1}); }, "already appears");
  SGD opt({a}, {.lr = 0.1});
  expect_error([&] { opt.add_param_group({{a}}); }, "already appears");
  expect_error([&] { SGD({a, a}, {.lr = 0.1}); }, "already appears");
}

TEST(OptimizerErrors, NonLeafEmptyAndIntegerParameters) {
  Tensor a = random_param({2});
  expect_error([&] { SGD({a * 2.0}, {.lr = 0.1}); }, "not a leaf");
  expect_error([&] { SGD(std::vector<Tensor>{}, {.lr = 0.1}); }, "empty");
  expect_error([&] { SGD({Tensor()}, {.lr = 0.1}); }, "undefined");
  expect_error([&] { SGD({arange(3.0, kInt64)}, {.lr = 0.1}); }, "floating point");
}

// ------------------------------------------------------------ state dicts

// Per-step gradients, fixed in advance so both runs see the same ones.
std::vector<std::vector<Tensor>> make_grads(const std::vector<Tensor>& params, int steps) {
  std::vector<std::vector<Tensor>> grads(steps);
  for (auto& step : grads)
    for (const Tensor& p : params) step.push_back(randn(p.shape(), TensorOptions().dtype(p.dtype())));
  return grads;
}

void run_steps(Optimizer& opt, LRScheduler* sched, const std::vector<Tensor>& params,
               const std::vector<std::vector<Tensor>>& grads, int from, int to) {
  for (int s = from; s < to; ++s) {
    for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(grads[s][i].clone());
    opt.step();
    if (sched) sched->step();
  }
}

template <class Optim, class Options> void check_resume(const Options& options) {
  manual_seed(7);
  const std::vector<Tensor> original = {random_param({3, 2}), random_param({4}), random_param({2, 2})};
  const auto grads = make_grads(original, 6);
  auto copy_all = [](const std::vector<Tensor>& ps) {
    std::vector<Tensor> out;
    for (const Tensor& p : ps) out.push_back(copy_param(p));
    return out;
  };
  auto groups_of = [&options](const std::vector<Tensor>& ps) {
    Options second = options;
    second.lr = 0.5 * options.lr;
    return std::vector<ParamGroup<Options>>{ParamGroup<Options>{std::vector<Tensor>{ps[0], ps[1]}},
                                            ParamGroup<Options>{std::vector<Tensor>{ps[2]}, second}};
  };

  // Uninterrupted: 6 steps with a warmup-cosine schedule.
  const std::vector<Tensor> straight = copy_all(original);
  Optim opt_a(groups_of(straight), options);
  CosineAnnealingLR sched_a(opt_a, {.total_steps = 6, .warmup_steps = 2});
  run_steps(opt_a, &sched_a, straight, grads, 0, 6);

  // Interrupted after 3 steps; the state goes through the flat (file) form.
  const std::vector<Tensor> first = copy_all(original);
  Optim opt_b(groups_of(first), options);
  CosineAnnealingLR sched_b(opt_b, {.total_steps = 6, .warmup_steps = 2});
  run_steps(opt_b, &sched_b, first, grads, 0, 3);
  const StateDict saved = flatten(opt_b.state_dict());
  const SchedulerState saved_sched = sched_b.state_dict();
  const std::vector<Tensor> at_three = copy_all(first);  // what a model checkpoint holds
  run_steps(opt_b, &sched_b, first, grads, 3, 4);  // training on must not change the saved state

  // A fresh process: new optimizer (with another lr) over the checkpointed parameters.
  Options other = options;
  other.lr = 123.0;
  Optim opt_c(groups_of(at_three), other);
  CosineAnnealingLR sched_c(opt_c, {.total_steps = 6, .warmup_steps = 2});
  opt_c.load_state_dict(unflatten(saved));
  sched_c.load_state_dict(saved_sched);
  EXPECT_DOUBLE_EQ(opt_c.lr(0), sched_a.lr_at(3, 0));
  EXPECT_DOUBLE_EQ(opt_c.lr(1), sched_a.lr_at(3, 1));
  EXPECT_EQ(sched_c.last_step(), 3);
  run_steps(opt_c, &sched_c, at_three, grads, 3, 6);

  for (size_t i = 0; i < straight.size(); ++i) expect_equal(at_three[i], straight[i]);
  EXPECT_EQ(sched_c.get_last_lr(), sched_a.get_last_lr());
}

TEST(OptimizerState, SGDMomentumResumesExactly) {
  check_resume<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
}

TEST(OptimizerState, AdamResumesExactly) { check_resume<Adam>(AdamOptions{.lr = 0.01, .weight_decay = 0.1}); }

TEST(OptimizerState, AdamWResumesExactly) { check_resume<AdamW>(AdamWOptions{.lr = 0.01}); }

TEST(OptimizerState, StateDictHoldsStepsBuffersAndHyperParams) {
  manual_seed(8);
  Tensor a = random_param({2, 3}), b = random_param({4});
  AdamW opt({a, b}, {.lr = 0.02, .weight_decay = 0.3});
  set_random_grad(a);
  opt.step();
  opt.set_lr(0.007);
  const OptimizerState st = opt.state_dict();
  ASSERT_EQ(st.param_groups.size(), 1u);
  EXPECT_EQ(st.param_groups[0].params, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(st.state.size(), 1u);  // b was never stepped
  EXPECT_EQ(st.state.at(0).step, 1);
  EXPECT_EQ(st.state.at(0).buffers.at("exp_avg").shape(), (Shape{2, 3}));
  EXPECT_EQ(st.state.at(0).buffers.at("exp_avg_sq").shape(), (Shape{2, 3}));
  bool found_lr = false;
  for (const auto& [k, v] : st.param_groups[0].hyper_params)
    if (k == "lr") {
      found_lr = true;
      EXPECT_DOUBLE_EQ(v, 0.007);
    }
  EXPECT_TRUE(found_lr);

  // The flat form has the documented keys and round-trips.
  const StateDict flat = flatten(st);
  std::vector<std::string> keys;
  for (const auto& [k, _] : flat) keys.push_back(k);
  for (const char* k : {"state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq", "param_groups.0.params",
                        "param_groups.0.lr", "param_groups.0.weight_decay"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  const OptimizerState back = unflatten(flat);
  EXPECT_EQ(back.state.at(0).step, 1);
  EXPECT_EQ(back.param_groups[0].params, st.param_groups[0].params);
  EXPECT_EQ(back.param_groups[0].hyper_params, st.param_groups[0].hyper_params);
  expect_equal(back.state.at(0).buffers.at("exp_avg"), st.state.at(0).buffers.at("exp_avg"));
}

TEST(OptimizerStateErrors, MismatchedGroupsParamsShapesAndNames) {
  manual_seed(9);
  Tensor a = random_param({2}), b = random_param({3});
  SGD source({a, b}, {.lr = 0.1, .momentum = 0.9});
  set_random_grad(a);
  set_random_grad(b);
  source.step();
  const OptimizerState st = source.state_dict();

  Tensor c = random_param({2}), d = random_param({3});
  SGD two_groups({SGD::Group{{c}}, SGD::Group{{d}}}, {.lr = 0.1});
  expect_error([&] { two_groups.load_state_dict(st); }, "has 1 parameter groups, this optimizer has 2");

  SGD one_param({copy_param(a)}, {.lr = 0.1});
  expect_error([&] { one_param.load_state_dict(st); }, "group 0 of the state has 2 parameters");

  SGD swapped({random_param({3}), random_param({2})}, {.lr = 0.1});
  expect_error([&] { swapped.load_state_dict(st); }, "has shape [2] but the parameter has shape [3]");

  OptimizerState foreign = st;
  foreign.param_groups[0].hyper_params.emplace_back("beta1", 0.9);
  SGD target({copy_param(a), copy_param(b)}, {.lr = 0.5});
  expect_error([&] { target.load_state_dict(foreign); }, "unknown hyper-parameter 'beta1'");
  EXPECT_DOUBLE_EQ(target.lr(), 0.5);  // a failed load changes nothing

  OptimizerState bad_nesterov = st;
  bad_nesterov.param_groups[0].hyper_params.emplace_back("nesterov", 1.0);
  bad_nesterov.param_groups[0].hyper_params.emplace_back("dampening", 0.5);
  expect_error([&] { target.load_state_dict(bad_nesterov); }, "Nesterov");

  EXPECT_THROW(unflatten({{"state.x.step", scalar_tensor(1, kInt64)}}), Error);
  EXPECT_THROW(unflatten({{"weights.0", scalar_tensor(1.0, kFloat64)}}), Error);
  EXPECT_THROW(unflatten({{"param_groups.1.lr", scalar_tensor(1.0, kFloat64)}}), Error);

  target.load_state_dict(st);  // the right state loads
  EXPECT_DOUBLE_EQ(target.lr(), 0.1);
  expect_equal(target.state_of(target.params(0)[1])->buffers.at("momentum_buffer"),
               st.state.at(1).buffers.at("momentum_buffer"));
}

}  // namespace
}  // namespace anvil::nn::optim::test
