// Worker for ddp/test_data_parallel_processes.cpp: ring all-reduce, DDP and ZeRO-1
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
#include "distributed/ddp/ddp.h"
#include "distributed/process_group/init.h"
#include "distributed/process_group/ring_all_reduce.h"
#include "distributed/zero/zero.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"
#include "workers/one_process_reference.h"
#include "workers/worker_util.h"

using namespace anvil;
using namespace anvil::distributed;

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
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

void zero(const std::shared_ptr<ProcessGroup>& g) {
  const anvil::test::worker::ZeroRun run = anvil::test::worker::check_zero_matches_adamw(g, Device::cpu(), 4, {});
  std::cout << "zero state bytes " << run.optimizer_state_bytes << "\n";
  check(run.optimizer_state_bytes == 2 * run.shard_size * 8, "unexpected ZeRO state size");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const uint64_t seed = std::stoull(anvil::test::worker::arg(argc, argv, "--seed", "1"));
  try {
    manual_seed(seed);
    init_process_group();
    auto g = default_group_ptr();
    if (mode == "ring")
      ring(*g);
    else if (mode == "ddp")
      anvil::test::worker::check_ddp_matches_one_process(g, Device::cpu(), 4);
    else if (mode == "zero")
      zero(g);
    else
      throw std::runtime_error("unknown mode '" + mode + "'");
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
