// The Trainer with tuple and map batches (a model with several inputs), and
// its precision flag through autocast (per op) or the whole-model path.
#include <gtest/gtest.h>

#include "nn/optim/optim.h"
#include "nn/train/train.h"
#include "tests/nn/layers/layer_test_util.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;

train::TrainerOptions quiet(int64_t epochs) {
  train::TrainerOptions o;
  o.max_epochs = epochs;
  o.device = Device::cpu();
  o.progress = train::ProgressMode::Off;
  o.print_report = false;
  return o;
}

// Two inputs: features and a per-feature mask that zeroes some of them.
struct MaskedNet : Module {
  std::shared_ptr<Linear> fc1 = register_module("fc1", std::make_shared<Linear>(6, 16));
  std::shared_ptr<Linear> fc2 = register_module("fc2", std::make_shared<Linear>(16, 2));
  DType seen_hidden = kFloat32, seen_weight = kFloat32;
  MaskedNet() : Module("MaskedNet") {}
  Tensor forward_inputs(const std::vector<Tensor>& in) override {
    ANVIL_CHECK(in.size() == 2, "MaskedNet: expected {x, mask}");
    Tensor h = fc1->forward(in[0] * in[1]);
    seen_hidden = h.dtype();
    seen_weight = fc1->weight.dtype();
    return fc2->forward(relu(h));
  }
};

// A problem where the mask matters: the class is the sign of the sum of the unmasked features.
struct Problem {
  Tensor x, mask, y;
};
Problem problem(int64_t n, uint64_t seed) {
  manual_seed(seed);
  Problem p{randn({n, 6}), (rand({n, 6}) > 0.3).to(kFloat32), Tensor()};
  p.y = (sum(p.x * p.mask, {1}) > 0).to(kInt64);
  return p;
}

struct TupleTask : train::Task {
  std::shared_ptr<MaskedNet> net = std::make_shared<MaskedNet>();
  std::shared_ptr<Module> model() override { return net; }
  train::StepOutput training_step(const data::Example& b) override { return {cross_entropy((*net)(b[0], b[1]), b[2])}; }
  train::Metrics validation_step(const data::Example& b) override {
    Tensor logits = (*net)(b[0], b[1]);
    return {{"loss", cross_entropy(logits, b[2]).item<double>()}, {"accuracy", train::accuracy(logits, b[2])}};
  }
};

struct MapTask : TupleTask {
  train::StepOutput training_step(const data::Example& b) override {
    return {cross_entropy((*net)(b["x"], b["mask"]), b["y"])};
  }
  train::Metrics validation_step(const data::Example& b) override {
    Tensor logits = (*net)(b["x"], b["mask"]);
    return {{"accuracy", train::accuracy(logits, b["y"])}};
  }
};

TEST(TrainerBatches, TupleBatchesFeedAModelWithSeveralInputs) {
  Problem p = problem(256, 1);
  auto set = std::make_shared<data::TensorTupleDataset>(std::vector<Tensor>{p.x, p.mask, p.y});
  data::DataLoader loader(set, testing::loader_options(32, true, 5));
  data::Example first = *loader.begin();
  ASSERT_EQ(first.tensors.size(), 3u);
  EXPECT_EQ(first[1].shape(), (Shape{32, 6}));
  EXPECT_EQ(first.batch_size(), 32);
  manual_seed(2);
  TupleTask task;
  optim::Adam opt(task.net->parameters(), {.lr = 1e-2});
  train::FitResult r = train::Trainer(quiet(8)).fit(task, loader, &loader, opt);
  EXPECT_GT(r.epoch_metrics.back().at("val_accuracy"), 0.9);
  EXPECT_LT(r.step_losses.back(), r.step_losses.front());
}

TEST(TrainerBatches, MapBatchesAreBatchedByNameEvenFromPerExampleGet) {
  Problem p = problem(256, 3);
  auto set =
      std::make_shared<data::TensorMapDataset>(std::map<std::string, Tensor>{{"x", p.x}, {"mask", p.mask}, {"y", p.y}});
  // The default Dataset::get_batch (stacking get()) handles named tensors too.
  data::Example stacked = set->data::Dataset::get_batch({3, 1, 4});
  EXPECT_EQ(stacked["mask"].shape(), (Shape{3, 6}));
  EXPECT_EQ((stacked["x"] - index_select(p.x, 0, from_vector<int64_t>({3, 1, 4}))).abs().max().item<double>(), 0.0);
  data::DataLoader loader(set, testing::loader_options(32, true, 5));
  manual_seed(2);
  MapTask task;
  optim::Adam opt(task.net->parameters(), {.lr = 1e-2});
  train::FitResult r = train::Trainer(quiet(8)).fit(task, loader, &loader, opt);
  EXPECT_GT(r.epoch_metrics.back().at("val_accuracy"), 0.9);
  testing::expect_error([&] { (void)stacked["labels"]; }, {"Example", "'labels'", "mask, x, y"});
  testing::expect_error([&] { (void)stacked[0]; }, {"Example", "tensor 0", "0 tensors"});
  testing::expect_error(
      [&] {
        data::TensorTupleDataset({p.x, p.y.narrow(0, 0, 10)});
      },
      {"TensorTupleDataset", "tensor 1", "[10]"});
}

TEST(TrainerBatches, PrecisionRunsThroughAutocastOrTheWholeModel) {
  Problem p = problem(128, 4);
  auto set = std::make_shared<data::TensorTupleDataset>(std::vector<Tensor>{p.x, p.mask, p.y});
  data::DataLoader loader(set, testing::loader_options(32));
  for (train::AmpMode mode : {train::AmpMode::Autocast, train::AmpMode::WholeModel}) {
    const bool autocast = mode == train::AmpMode::Autocast;
    SCOPED_TRACE(autocast ? "autocast" : "whole model");
    manual_seed(2);
    TupleTask task;
    optim::Adam opt(task.net->parameters(), {.lr = 1e-2});
    auto o = quiet(6);
    o.precision = train::Precision::BF16;
    o.amp_mode = mode;
    train::FitResult r = train::Trainer(o).fit(task, loader, &loader, opt);
    // Linear outputs in bfloat16 either way; the weights stay float32 under autocast.
    EXPECT_EQ(task.net->seen_hidden, kBFloat16);
    EXPECT_EQ(task.net->seen_weight, autocast ? kFloat32 : kBFloat16);
    for (const Tensor& w : task.net->parameters()) EXPECT_EQ(w.dtype(), kFloat32);
    EXPECT_GT(r.epoch_metrics.back().at("val_accuracy"), 0.85);
  }
  EXPECT_FALSE(autocast::is_enabled());  // the scope ended with the steps
}

}  // namespace
}  // namespace anvil
