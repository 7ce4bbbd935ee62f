#include "nn/serialize/checkpoint.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/layers/linear.h"
#include "nn/optim/adam.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/serialize/atomic_file.h"
#include "serialize_test_util.h"

namespace anvil::nn::serialize::test {
namespace {

using optim::AdamW;
using optim::AdamWOptions;

// A model, an optimizer with two groups and a schedule: what a run holds.
struct TrainingRun {
  std::shared_ptr<Linear> model = std::make_shared<Linear>(4, 3);
  AdamW opt{{AdamW::Group{{model->weight}}, AdamW::Group{{model->bias}, AdamWOptions{.lr = 0.05}}},
            AdamWOptions{.lr = 0.01}};
  optim::CosineAnnealingLR sched{opt, {.total_steps = 20, .warmup_steps = 2}};

  // One update on a batch drawn from the global generator, so resuming
  // exactly needs the RNG state too.
  void train_step() {
    Tensor x = randn({8, 4}), y = randn({8, 3});
    opt.zero_grad();
    mse_loss(model->forward(x), y).backward();
    opt.step();
    sched.step();
  }

  Checkpoint checkpoint(int64_t step, int64_t epoch) const {
    Checkpoint c;
    c.model = model->state_dict();
    c.optimizer = opt.state_dict();
    c.scheduler = sched.state_dict();
    c.rng = generator_state();
    c.step = step;
    c.epoch = epoch;
    return c;
  }

  void restore(const Checkpoint& c) {
    model->load_state_dict(c.model);
    opt.load_state_dict(*c.optimizer);
    sched.load_state_dict(*c.scheduler);
    set_generator_state(*c.rng);
  }
};

std::map<std::string, std::string> bytes_by_name(const StateDict& sd) {
  std::map<std::string, std::string> m;
  for (const auto& [name, t] : sd)
    m[name] = std::string(dtype_name(t.dtype())) + t.shape_str() + logical_bytes(t.cpu());
  return m;
}

std::map<std::string, double> as_map(const optim::HyperParams& hp) { return {hp.begin(), hp.end()}; }

void expect_same_optimizer_state(const optim::OptimizerState& a, const optim::OptimizerState& b) {
  ASSERT_EQ(a.state.size(), b.state.size());
  for (const auto& [index, s] : a.state) {
    ASSERT_TRUE(b.state.count(index)) << "parameter " << index;
    const auto& t = b.state.at(index);
    EXPECT_EQ(s.step, t.step) << "parameter " << index;
    ASSERT_EQ(s.buffers.size(), t.buffers.size());
    for (const auto& [name, buf] : s.buffers) {
      ASSERT_TRUE(t.buffers.count(name)) << name;
      EXPECT_EQ(buf.dtype(), t.buffers.at(name).dtype()) << name;
      EXPECT_EQ(buf.shape(), t.buffers.at(name).shape()) << name;
      EXPECT_EQ(logical_bytes(buf.cpu()), logical_bytes(t.buffers.at(name))) << "parameter " << index << " " << name;
    }
  }
  ASSERT_EQ(a.param_groups.size(), b.param_groups.size());
  for (size_t g = 0; g < a.param_groups.size(); ++g) {
    EXPECT_EQ(a.param_groups[g].params, b.param_groups[g].params) << "group " << g;
    EXPECT_EQ(as_map(a.param_groups[g].hyper_params), as_map(b.param_groups[g].hyper_params)) << "group " << g;
  }
}

class CheckpointTest : public ScratchDir {};

TEST_F(CheckpointTest, RoundTripsEveryField) {
  manual_seed(11);
  TrainingRun run;
  for (int i = 0; i < 3; ++i) run.train_step();
  Checkpoint c = run.checkpoint(3, 1);
  c.rng = GeneratorState{0xFFFFFFFFFFFFFFF0ull, (uint64_t(1) << 63) + 5};  // every bit of a uint64
  c.extra = {{"scaler.scale", full({}, 65536.0f)}, {"best_loss", full({}, 0.25, kFloat64)}};
  c.metadata = {{"run", "unit-test"}, {"config", R"({"lr": 0.01, "note": "é"})"}};

  save_checkpoint(path("ckpt.safetensors"), c);
  EXPECT_EQ(listing(), (std::vector<std::string>{"ckpt.safetensors"}));
  const Checkpoint back = load_checkpoint(path("ckpt.safetensors"));

  EXPECT_EQ(bytes_by_name(back.model), bytes_by_name(c.model));
  ASSERT_TRUE(back.optimizer.has_value());
  ASSERT_EQ(back.optimizer->state.size(), 2u);  // both parameters were stepped
  EXPECT_EQ(back.optimizer->state.at(0).step, 3);
  expect_same_optimizer_state(*c.optimizer, *back.optimizer);
  EXPECT_EQ(as_map(back.optimizer->param_groups[1].hyper_params).at("lr"), run.opt.lr(1));
  ASSERT_TRUE(back.scheduler.has_value());
  EXPECT_EQ(back.scheduler->last_step, 3);
  EXPECT_EQ(back.scheduler->base_lrs, (std::vector<double>{0.01, 0.05}));
  ASSERT_TRUE(back.rng.has_value());
  EXPECT_EQ(back.rng->seed, 0xFFFFFFFFFFFFFFF0ull);
  EXPECT_EQ(back.rng->offset, (uint64_t(1) << 63) + 5);
  EXPECT_EQ(back.step, 3);
  EXPECT_EQ(back.epoch, 1);
  EXPECT_EQ(bytes_by_name(back.extra), bytes_by_name(c.extra));
  EXPECT_EQ(back.metadata, c.metadata);  // the reserved anvil.* keys are not handed back

  // The file is plain safetensors with the documented prefixes.
  const SafetensorsContents raw = load_safetensors_with_metadata(path("ckpt.safetensors"));
  EXPECT_EQ(raw.metadata.at("anvil.format"), "checkpoint");
  std::map<std::string, Tensor> names(raw.tensors.begin(), raw.tensors.end());
  for (const char* key :
       {"model.weight", "model.bias", "optimizer.state.0.exp_avg", "optimizer.param_groups.1.lr", "scheduler.last_step",
        "scheduler.base_lrs", "rng.seed", "rng.offset", "progress.step", "progress.epoch", "extra.best_loss"})
    EXPECT_TRUE(names.count(key)) << key;
}

TEST_F(CheckpointTest, PartsLeftUnsetStayUnset) {
  Checkpoint c;
  c.model = {{"w", randn({2, 2})}};
  c.step = 42;
  save_checkpoint(path("c"), c);
  const Checkpoint back = load_checkpoint(path("c"));
  EXPECT_FALSE(back.optimizer.has_value());
  EXPECT_FALSE(back.scheduler.has_value());
  EXPECT_FALSE(back.rng.has_value());
  EXPECT_TRUE(back.extra.empty());
  EXPECT_TRUE(back.metadata.empty());
  EXPECT_EQ(back.step, 42);
  EXPECT_EQ(back.epoch, 0);
  EXPECT_EQ(bytes_by_name(back.model), bytes_by_name(c.model));
}

TEST_F(CheckpointTest, ResumingContinuesBitForBit) {
  manual_seed(5);
  TrainingRun a;
  for (int i = 0; i < 3; ++i) a.train_step();
  save_checkpoint(path("mid"), a.checkpoint(3, 0));
  for (int i = 0; i < 4; ++i) a.train_step();
  const GeneratorState a_end = generator_state();

  manual_seed(999);  // another init and another generator position
  TrainingRun b;
  b.train_step();
  b.restore(load_checkpoint(path("mid")));
  for (int i = 0; i < 4; ++i) b.train_step();

  EXPECT_EQ(logical_bytes(b.model->weight.detach()), logical_bytes(a.model->weight.detach()));
  EXPECT_EQ(logical_bytes(b.model->bias.detach()), logical_bytes(a.model->bias.detach()));
  EXPECT_EQ(b.opt.lr(0), a.opt.lr(0));
  EXPECT_EQ(b.opt.lr(1), a.opt.lr(1));
  EXPECT_EQ(generator_state().seed, a_end.seed);
  EXPECT_EQ(generator_state().offset, a_end.offset);
}

TEST_F(CheckpointTest, ACrashMidWriteLeavesThePreviousCheckpoint) {
  Checkpoint first;
  first.model = {{"w", randn({64})}};
  first.step = 100;
  save_checkpoint(path("last"), first);

  // What a save of the next checkpoint would write, cut off half way.
  Checkpoint second;
  second.model = {{"w", randn({64})}};
  second.step = 200;
  save_checkpoint(path("second"), second);
  const std::string next = read_bytes(path("second"));
  fs::remove(path("second"));
  EXPECT_THROW(atomic_write_file(path("last"),
                                 [&](std::ostream& out) {
                                   out.write(next.data(), static_cast<std::streamsize>(next.size() / 2));
                                   throw std::runtime_error("killed mid-write");
                                 }),
               std::runtime_error);

  EXPECT_EQ(listing(), (std::vector<std::string>{"last"}));
  const Checkpoint back = load_checkpoint(path("last"));
  EXPECT_EQ(back.step, 100);
  EXPECT_EQ(bytes_by_name(back.model), bytes_by_name(first.model));

  // A save that fails on its own (an undefined tensor) touches nothing either.
  second.model.emplace_back("broken", Tensor());
  const std::string msg = error_of([&] { save_checkpoint(path("last"), second); });
  EXPECT_NE(msg.find("model.broken"), std::string::npos) << msg;
  EXPECT_EQ(load_checkpoint(path("last")).step, 100);
  EXPECT_EQ(listing(), (std::vector<std::string>{"last"}));
}

TEST_F(CheckpointTest, ClearErrors) {
  save_safetensors(path("plain"), {{"w", randn({2})}});
  std::string msg = error_of([&] { load_checkpoint(path("plain")); });
  EXPECT_NE(msg.find("not an anvil checkpoint"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path("plain").string()), std::string::npos) << msg;

  Checkpoint c;
  c.metadata = {{"anvil.format", "mine"}};
  msg = error_of([&] { save_checkpoint(path("x"), c); });
  EXPECT_NE(msg.find("reserved prefix"), std::string::npos) << msg;

  const Metadata ours = {{"anvil.format", "checkpoint"}, {"anvil.format_version", "1"}};
  const StateDict progress = {{"progress.step", full({}, 1, kInt64)}, {"progress.epoch", full({}, 0, kInt64)}};
  StateDict weird = progress;
  weird.emplace_back("weird.x", randn({1}));
  save_safetensors(path("weird"), weird, ours);
  msg = error_of([&] { load_checkpoint(path("weird")); });
  EXPECT_NE(msg.find("unexpected entry 'weird.x'"), std::string::npos) << msg;
  StateDict no_dot = progress;
  no_dot.emplace_back("model", randn({1}));
  save_safetensors(path("nodot"), no_dot, ours);
  msg = error_of([&] { load_checkpoint(path("nodot")); });
  EXPECT_NE(msg.find("unexpected entry 'model'"), std::string::npos) << msg;

  save_safetensors(path("noepoch"), {progress[0]}, ours);
  msg = error_of([&] { load_checkpoint(path("noepoch")); });
  EXPECT_NE(msg.find("'progress.epoch' is missing"), std::string::npos) << msg;

  StateDict float_step = {{"progress.step", full({}, 1.0f)}, progress[1]};
  save_safetensors(path("floatstep"), float_step, ours);
  msg = error_of([&] { load_checkpoint(path("floatstep")); });
  EXPECT_NE(msg.find("'progress.step' must be one int64"), std::string::npos) << msg;

  save_safetensors(path("v2"), progress, {{"anvil.format", "checkpoint"}, {"anvil.format_version", "2"}});
  msg = error_of([&] { load_checkpoint(path("v2")); });
  EXPECT_NE(msg.find("unsupported checkpoint format version '2'"), std::string::npos) << msg;

  StateDict bad_opt = progress;
  bad_opt.emplace_back("optimizer.state.x.step", full({}, 1, kInt64));
  save_safetensors(path("badopt"), bad_opt, ours);
  msg = error_of([&] { load_checkpoint(path("badopt")); });
  EXPECT_NE(msg.find("bad optimizer state"), std::string::npos) << msg;
  EXPECT_NE(msg.find("state.x.step"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::nn::serialize::test
