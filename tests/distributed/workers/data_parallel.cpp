// Worker for test_data_parallel_processes.cpp: ring all-reduce, DDP and ZeRO-1
// in real processes started by anvil-run. Every rank seeds the same generator,
// so each can compute the one-process reference itself and compare.
//   dist_worker_data_parallel ring|ddp|zero --seed S
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/ops.h"
#include "core/random.h"
#include "distributed/ddp.h"
#include "distributed/init.h"
#include "distributed/ring_all_reduce.h"
#include "distributed/zero.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"
#include "workers/worker_util.h"

using namespace anvil;
using namespace anvil::distributed;

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

double max_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, (a[i] - b[i]).abs().max().item<double>());
  return m;
}

std::vector<Tensor> snapshot(const std::vector<Tensor>& ps) {
  std::vector<Tensor> out;
  for (const Tensor& p : ps) out.push_back(p.detach().clone());
  return out;
}

void ring(ProcessGroup& g) {
  for (int64_t numel : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{1000}, int64_t{65537}}) {
    for (DType dtype : {kFloat32, kFloat64, kInt64}) {
      // Different values per rank: the generator is seeded alike, so draw all and keep ours.
      Tensor mine;
      for (int r = 0; r < g.size(); ++r) {
        Tensor x = randn({numel}, kFloat64).mul_(100.0).to(dtype);
        if (r == g.rank()) mine = x;
      }
      Tensor a = mine.clone(), b = mine.clone();
      ring_all_reduce(g, a, ReduceOp::Sum, {.chunk_bytes = 1024});
      g.all_reduce(b, ReduceOp::Sum)->wait();
      const double err = (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
      const double tol = dtype == kFloat32 ? 1e-3 : (dtype == kFloat64 ? 1e-9 : 0.0);
      check(err <= tol, "ring vs backend numel " + std::to_string(numel) + " " + dtype_name(dtype) + ": error " +
                            std::to_string(err));
    }
  }
}

std::shared_ptr<nn::Module> mlp() {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 9), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(9, 4));
  m->to(kFloat64);
  return m;
}

// kBatch rows per step, every rank size divides it (2, 3, 4 ranks).
constexpr int64_t kBatch = 12;

// Four steps of (input, target) batches for mlp().
std::pair<std::vector<Tensor>, std::vector<Tensor>> random_steps() {
  std::vector<Tensor> xs, ys;
  for (int s = 0; s < 4; ++s) {
    xs.push_back(randn({kBatch, 6}, kFloat64));
    ys.push_back(randn({kBatch, 4}, kFloat64));
  }
  return {xs, ys};
}

void ddp(std::shared_ptr<ProcessGroup> g) {
  const int n = g->size(), r = g->rank();
  auto ref = mlp();
  auto model = mlp();
  model->load_state_dict(ref->state_dict());
  const auto [xs, ys] = random_steps();
  nn::optim::AdamW ref_opt(ref->parameters(), {.lr = 0.01});
  for (size_t s = 0; s < xs.size(); ++s) {
    ref_opt.zero_grad();
    mse_loss(ref->forward(xs[s]), ys[s]).backward();
    ref_opt.step();
  }
  auto wrapped = std::make_shared<DistributedDataParallel>(model, g, DDPOptions{.bucket_cap_bytes = 256});
  nn::optim::AdamW opt(wrapped->parameters(), {.lr = 0.01});
  const int64_t per = kBatch / n;
  for (size_t s = 0; s < xs.size(); ++s) {
    opt.zero_grad();
    mse_loss(wrapped->forward(xs[s].narrow(0, r * per, per)), ys[s].narrow(0, r * per, per)).backward();
    opt.step();
  }
  const double err = max_diff(snapshot(model->parameters()), snapshot(ref->parameters()));
  check(err < 1e-10, "DDP parameters differ from one process by " + std::to_string(err));
}

void zero(std::shared_ptr<ProcessGroup> g) {
  const int n = g->size(), r = g->rank();
  auto ref = mlp();  // 6*9+9 + 9*4+4 = 103 parameters: prime
  auto model = mlp();
  model->load_state_dict(ref->state_dict());
  const auto [xs, ys] = random_steps();
  nn::optim::AdamW ref_opt(ref->parameters(), {.lr = 0.01, .weight_decay = 0.05});
  ZeroAdamW opt(model->parameters(), g, {.lr = 0.01, .weight_decay = 0.05});
  const int64_t per = kBatch / n;
  for (size_t s = 0; s < xs.size(); ++s) {
    ref_opt.zero_grad();
    mse_loss(ref->forward(xs[s]), ys[s]).backward();
    ref_opt.step();
    opt.zero_grad();
    mse_loss(model->forward(xs[s].narrow(0, r * per, per)), ys[s].narrow(0, r * per, per)).backward();
    opt.step();
  }
  const double err = max_diff(snapshot(model->parameters()), snapshot(ref->parameters()));
  std::ostringstream what;
  what << "ZeRO parameters differ from AdamW by " << err;
  // Each rank's gradient is a mean over its shard, averaged across ranks: the
  // same sum in another order, so float64 rounding (seen: 2.2e-12 after four
  // steps, Adam's normalisation amplifying it) is expected; a wrong shard or
  // step is orders of magnitude larger. The DDP check uses the same bound.
  check(err < 1e-10, what.str());
  std::cout << "zero state bytes " << opt.optimizer_state_bytes() << " of " << opt.unsharded_optimizer_state_bytes()
            << "\n";
  check(opt.optimizer_state_bytes() == 2 * opt.shard_size() * 8, "unexpected ZeRO state size");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const uint64_t seed = std::stoull(anvil::test::worker::arg(argc, argv, "--seed", "1"));
  try {
    manual_seed(seed);
    init_process_group();
    auto g = default_group_ptr();
    if (mode == "ring") ring(*g);
    else if (mode == "ddp") ddp(g);
    else if (mode == "zero") zero(g);
    else throw std::runtime_error("unknown mode '" + mode + "'");
    g->barrier()->wait();
    g.reset();
    destroy_process_group();
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << mode << ": " << e.what() << std::endl;
    return 1;
  }
  std::cout << "OK " << mode << std::endl;
  return 0;
}
