// dist_worker_pipeline: one stage of a pipeline-parallel job, started by
// tests/distributed/pipeline/test_pipeline_launch.cpp through anvil-run. Every
// rank also runs the whole model unpipelined (same seed) and checks its own
// stage's gradients, and its parameters after an SGD step, against it.
//
//   dist_worker_pipeline train SCHEDULE MICRO_BATCHES [--seed S] [--batch N] [--steps K]
//                        [--device cpu|cuda] [--trace PATH]
//       K (default 1) pipelined training steps with gpipe or 1f1b, each
//       checked; prints "OK stage=S loss=L max_live=K bubble=B theoretical=T
//       transport=D". --device cuda puts each rank's stage, and its
//       reference, on cuda:(LOCAL_RANK % devices): the stages then exchange
//       CUDA tensors over NCCL (tests/distributed/pipeline/test_pipeline_nccl.cpp).
//   dist_worker_pipeline stage [--seed S]
//       layer-split model parallelism across ranks with PipelineStage's
//       forward()/backward() (one micro-batch, no schedule)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/distributed.h"
#include "distributed/model_parallel/model_parallel.h"
#include "distributed/pipeline/executor.h"
#include "kernels/cuda_info.h"
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
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::Tanh>(),
                                              std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::Tanh>(),
                                              std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::Tanh>(),
                                              std::make_shared<nn::Linear>(16, 4));
  seq->to(kFloat64);
  return seq;
}

Tensor loss_fn(const Tensor& out, const Tensor& target) { return mse_loss(out, target); }

// Largest |a - b| relative to max(1, |b|) over the tensors.
double rel_diff(const Tensor& a, const Tensor& b) { return ((a - b).abs() / (b.abs() + 1.0)).max().item<double>(); }

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

struct TrainSettings {
  std::string schedule;
  int micro_batches = 4;
  uint64_t seed = 1;
  int64_t batch = 10;
  int steps = 1;
  Device device = Device::cpu();
  std::string trace;
};

bool close_loss(const char* what, double got, double want) {
  if (std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want))) return true;
  std::cout << "FAIL: " << what << " " << got << " != unpipelined " << want << "\n";
  return false;
}

int run_train(const TrainSettings& t) {
  auto group = default_group_ptr();
  const int rank = group->rank(), p = group->size();
  // The reference: the whole model on the whole batches, in this process, on
  // the same device. The same model again (same seed), of which this rank
  // keeps its stage.
  auto full = make_model(t.seed);
  auto model = make_model(t.seed);
  full->to(t.device);
  model->to(t.device);
  auto stage = stage_of_sequential(*model, rank, p);
  PipelineExecutor pipe(stage, group, loss_fn,
                        {.schedule = schedule_kind_from_string(t.schedule),
                         .micro_batches = t.micro_batches,
                         .device = t.device,
                         .record_timeline = !t.trace.empty()});
  nn::optim::SGD stage_sgd(stage->parameters(), {.lr = 0.1, .momentum = 0.9});
  nn::optim::SGD full_sgd(full->parameters(), {.lr = 0.1, .momentum = 0.9});
  manual_seed(t.seed + 100);
  bool ok = true;
  PipelineStepResult r;
  for (int step = 0; step < t.steps && ok; ++step) {
    // Fresh random batches each step; every rank draws the same.
    Tensor x = randn({t.batch, 8}, kFloat64).to(t.device);
    Tensor y = randn({t.batch, 4}, kFloat64).to(t.device);
    stage_sgd.zero_grad();
    full_sgd.zero_grad();
    loss_fn(full->forward(x), y).backward();
    double ref_loss = loss_fn(full->forward(x), y).item<double>();
    r = pipe.train_step(x, y);
    ok = compare("gradient", *stage, *full, true, 1e-12);
    if (pipe.is_last()) ok = close_loss("pipelined loss", r.loss, ref_loss) && ok;
    // One SGD step on both: identical parameters after it.
    stage_sgd.step();
    full_sgd.step();
    ok = compare("parameter after SGD", *stage, *full, false, 1e-12) && ok;
    // Evaluation (forward only) agrees with the updated full model.
    double eval = pipe.evaluate(x, y);
    if (pipe.is_last()) {
      NoGradGuard no_grad;
      ok = close_loss("evaluate", eval, loss_fn(full->forward(x), y).item<double>()) && ok;
    }
  }
  for (const Tensor& q : stage->parameters())
    if (q.device() != t.device) {
      std::cout << "FAIL: a stage parameter left " << t.device.str() << "\n";
      ok = false;
    }
  if (!t.trace.empty()) pipe.write_chrome_trace(t.trace);
  if (rank == 0) std::cout << pipe.schedule().str();
  std::printf("%s stage=%d loss=%.17g max_live=%d bubble=%.4f theoretical=%.4f transport=%s\n", ok ? "OK" : "FAIL",
              rank, r.loss, r.max_live_activations, r.bubble_fraction, r.theoretical_bubble_fraction,
              pipe.transport_device().str().c_str());
  return ok ? 0 : 1;
}

// --device cuda: this rank's GPU, as the NCCL worker picks it.
Device device_of(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  if (name != "cuda") throw std::runtime_error("--device must be cpu or cuda, got " + name);
  if (!cuda::is_available()) throw std::runtime_error("--device cuda: no CUDA device visible");
  const char* lr = std::getenv("LOCAL_RANK");
  return Device::cuda((lr ? std::atoi(lr) : 0) % cuda::device_count());
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
  if (stage.is_last())
    stage.backward(loss_fn(out, y));
  else
    stage.backward();
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
      rc = run_train({.schedule = argv[2],
                      .micro_batches = std::stoi(argv[3]),
                      .seed = seed,
                      .batch = std::stoll(arg(argc, argv, "--batch", "10")),
                      .steps = std::stoi(arg(argc, argv, "--steps", "1")),
                      .device = device_of(arg(argc, argv, "--device", "cpu")),
                      .trace = arg(argc, argv, "--trace", "")});
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
