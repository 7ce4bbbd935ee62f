// dist_worker_pipeline: one stage of a pipeline-parallel job, started by
// tests/distributed/pipeline/test_pipeline_launch.cpp through anvil-run. Every
// rank also runs the whole model unpipelined (same seed) and checks its own
// stage's gradients, and its parameters after an SGD step, against it.
//
//   dist_worker_pipeline train SCHEDULE MICRO_BATCHES [--seed S] [--batch N] [--trace PATH]
//       one pipelined training step with gpipe or 1f1b; prints
//       "OK stage=S loss=L max_live=K bubble=B theoretical=T"
//   dist_worker_pipeline stage [--seed S]
//       layer-split model parallelism across ranks with PipelineStage's
//       forward()/backward() (one micro-batch, no schedule)
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/distributed.h"
#include "distributed/model_parallel.h"
#include "distributed/pipeline/executor.h"
#include "nn/layers/layers.h"
#include "nn/optim/sgd.h"
#include "workers/worker_util.h"

using namespace anvil;
using namespace anvil::distributed;
using namespace anvil::distributed::pipeline;

namespace {

// Enough layers with parameters for three stages; float64 so that only the
// order of additions can differ between the pipelined and the plain run.
std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  manual_seed(seed);
  auto seq = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(16, 16),
      std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(16, 4));
  seq->to(kFloat64);
  return seq;
}

Tensor loss_fn(const Tensor& out, const Tensor& target) { return mse_loss(out, target); }

// Largest |a - b| relative to max(1, |b|) over the tensors.
double rel_diff(const Tensor& a, const Tensor& b) {
  return ((a - b).abs() / (b.abs() + 1.0)).max().item<double>();
}

// Compares every parameter of `stage` with the one of the same name in `full`.
bool compare(const char* what, const nn::Module& stage, const nn::Module& full, bool grads, double tol) {
  auto reference = full.named_parameters();
  bool ok = true;
  for (auto& [name, p] : stage.named_parameters()) {
    const Tensor* ref = nullptr;
    for (auto& [n, q] : reference)
      if (n == name) ref = &q;
    if (!ref) {
      std::cout << "FAIL: no parameter " << name << " in the full model\n";
      return false;
    }
    Tensor a = grads ? p.grad() : p, b = grads ? ref->grad() : *ref;
    if (!a.defined()) {
      std::cout << "FAIL: " << what << " of " << name << " missing\n";
      ok = false;
      continue;
    }
    double d = rel_diff(a, b);
    if (!(d <= tol)) {
      std::cout << "FAIL: " << what << " of " << name << " differs from the unpipelined model by " << d << "\n";
      ok = false;
    }
  }
  return ok;
}

int run_train(const std::string& schedule, int micro_batches, uint64_t seed, int64_t batch, const std::string& trace) {
  auto group = default_group_ptr();
  const int rank = group->rank(), p = group->size();
  manual_seed(seed + 100);
  Tensor x = randn({batch, 8}, kFloat64);
  Tensor y = randn({batch, 4}, kFloat64);

  // The reference: the whole model on the whole batch, in this process.
  auto full = make_model(seed);
  loss_fn(full->forward(x), y).backward();
  double ref_loss = loss_fn(full->forward(x), y).item<double>();

  // The same model again (same seed), of which this rank keeps its stage.
  auto model = make_model(seed);
  auto stage = stage_of_sequential(*model, rank, p);
  PipelineExecutor pipe(stage, group, loss_fn,
                        {.schedule = schedule_kind_from_string(schedule), .micro_batches = micro_batches,
                         .record_timeline = !trace.empty()});
  PipelineStepResult r = pipe.train_step(x, y);
  bool ok = compare("gradient", *stage, *full, true, 1e-12);
  if (pipe.is_last() && !(std::abs(r.loss - ref_loss) <= 1e-12 * std::max(1.0, std::abs(ref_loss)))) {
    std::cout << "FAIL: pipelined loss " << r.loss << " != unpipelined " << ref_loss << "\n";
    ok = false;
  }
  // One SGD step on both: identical parameters after it.
  nn::optim::SGD(stage->parameters(), {.lr = 0.1, .momentum = 0.9}).step();
  nn::optim::SGD(full->parameters(), {.lr = 0.1, .momentum = 0.9}).step();
  ok = compare("parameter after SGD", *stage, *full, false, 1e-12) && ok;
  // Evaluation (forward only) agrees with the updated full model.
  double eval = pipe.evaluate(x, y);
  if (pipe.is_last()) {
    NoGradGuard no_grad;
    double ref_eval = loss_fn(full->forward(x), y).item<double>();
    if (!(std::abs(eval - ref_eval) <= 1e-12 * std::max(1.0, std::abs(ref_eval)))) {
      std::cout << "FAIL: evaluate " << eval << " != " << ref_eval << "\n";
      ok = false;
    }
  }
  if (!trace.empty()) pipe.write_chrome_trace(trace);
  if (rank == 0) std::cout << pipe.schedule().str();
  std::printf("%s stage=%d loss=%.17g max_live=%d bubble=%.4f theoretical=%.4f\n", ok ? "OK" : "FAIL", rank,
              r.loss, r.max_live_activations, r.bubble_fraction, r.theoretical_bubble_fraction);
  return ok ? 0 : 1;
}

int run_stage(uint64_t seed) {
  auto group = default_group_ptr();
  const int rank = group->rank(), p = group->size();
  manual_seed(seed + 100);
  Tensor x = randn({6, 8}, kFloat64);
  Tensor y = randn({6, 4}, kFloat64);
  auto full = make_model(seed);
  loss_fn(full->forward(x), y).backward();
  auto model = make_model(seed);
  auto part = stage_of_sequential(*model, rank, p);
  PipelineStage stage(part, group);
  Tensor out = stage.forward(x);
  if (stage.is_last()) stage.backward(loss_fn(out, y));
  else stage.backward();
  bool ok = compare("gradient", *part, *full, true, 1e-12);
  std::printf("%s stage=%d\n", ok ? "OK" : "FAIL", rank);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using anvil::test::worker::arg;
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    uint64_t seed = std::stoull(arg(argc, argv, "--seed", "1"));
    init_process_group();
    int rc = 2;
    if (mode == "train" && argc > 3)
      rc = run_train(argv[2], std::stoi(argv[3]), seed, std::stoll(arg(argc, argv, "--batch", "10")),
                     arg(argc, argv, "--trace", ""));
    else if (mode == "stage")
      rc = run_stage(seed);
    else
      std::cout << "FAIL: usage: dist_worker_pipeline train SCHEDULE MICRO_BATCHES | stage\n";
    destroy_process_group();
    return rc;
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << e.what() << "\n";
    return 1;
  }
}
