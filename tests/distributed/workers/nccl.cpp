// dist_worker_nccl: one rank of the NCCL process group's tests on CUDA
// tensors (tests/distributed/process_group/nccl/test_nccl_processes.cpp), on the emulated NCCL
// in the emulated-GPU build or on real NCCL and GPUs. Each rank uses
// cuda:(LOCAL_RANK % devices); CPU tensors of the same group go to Gloo, which
// gives the reference.
//
//   dist_worker_nccl MODE [--seed S]
//   collectives  every collective and dtype on CUDA tensors against the same on
//                CPU tensors (Gloo); all-reduce results bit-identical on every rank
//   batch_ring   batch_isend_irecv: the ring exchange, and ops to and from every peer
//   ring         ring_all_reduce on CUDA tensors against the backend's all_reduce
//   ddp          DDP on CUDA parameters against one process
//   zero         ZeroAdamW (stages 1 and 2) on CUDA parameters against AdamW
//   subgroups    (4 ranks) collectives and send/recv on two subgroups, each
//                with its own communicator, and on the world
//   deadlock     ungrouped send then recv on both ranks (2 ranks): must fail with
//                a clear error, not hang
//   batched      the same exchange through batch_isend_irecv: completes
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "core/ops.h"
#include "core/random.h"
#include "distributed/distributed.h"
#include "kernels/cuda_info.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"
#include "workers/one_process_reference.h"
#include "workers/worker_util.h"

using namespace anvil;
using namespace anvil::distributed;
using namespace anvil::test::worker;

namespace {

const std::vector<DType> kDTypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                    DType::Int32,   DType::Int64,   DType::UInt8};

Device my_device() {
  const char* lr = std::getenv("LOCAL_RANK");
  return Device::cuda((lr ? std::atoi(lr) : 0) % cuda::device_count());
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// The CUDA result against the CPU (Gloo) one.
void same(const std::string& what, const Tensor& gpu, const Tensor& cpu) {
  check(gpu.device().is_cuda(), what + ": the result left the GPU");
  expect_close(what, cpu.dtype(), values_of(gpu.cpu()), values_of(cpu));
}

std::string label(const std::string& op, DType dt, size_t n) {
  return op + " " + dtype_name(dt) + " n=" + std::to_string(n);
}

void collectives(uint64_t seed) {
  const int rank = get_rank(), world = get_world_size();
  const Device dev = my_device();
  int salt = 0;
  for (DType dt : kDTypes) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{1000}}) {
      auto mine = [&](size_t count) { return make(dt, rank_values(seed, rank, dt, count, ++salt)); };
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
        if (op == ReduceOp::Avg && !is_floating(dt)) continue;
        Tensor cpu = mine(n), gpu = cpu.to(dev);
        all_reduce(cpu, op);
        all_reduce(gpu, op);
        same(label(std::string("all_reduce ") + to_string(op), dt, n), gpu, cpu);
      }
      for (int root = 0; root < world; ++root) {
        Tensor cpu = mine(n), gpu = cpu.to(dev);
        broadcast(cpu, root);
        broadcast(gpu, root);
        same(label("broadcast root " + std::to_string(root), dt, n), gpu, cpu);
      }
      {
        Tensor in = mine(n);
        Tensor out_cpu = zeros({static_cast<int64_t>(n) * world}, dt);
        Tensor out_gpu = out_cpu.to(dev);
        all_gather(out_cpu, in);
        all_gather(out_gpu, in.to(dev));
        same(label("all_gather", dt, n), out_gpu, out_cpu);
      }
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        Tensor in = mine(n * static_cast<size_t>(world));
        Tensor out_cpu = zeros({static_cast<int64_t>(n)}, dt);
        Tensor out_gpu = out_cpu.to(dev);
        reduce_scatter(out_cpu, in, op);
        reduce_scatter(out_gpu, in.to(dev), op);
        same(label(std::string("reduce_scatter ") + to_string(op), dt, n), out_gpu, out_cpu);
      }
      {
        Tensor in = mine(n * static_cast<size_t>(world));
        Tensor out_cpu = zeros({static_cast<int64_t>(n) * world}, dt);
        Tensor out_gpu = out_cpu.to(dev);
        all_to_all_single(out_cpu, in);
        all_to_all_single(out_gpu, in.to(dev));
        same(label("all_to_all_single", dt, n), out_gpu, out_cpu);
      }
    }
  }
  // Random float32 sums round differently in another order: every rank must
  // still hold the same bits (the emulated NCCL reduces in rank order).
  manual_seed(seed + static_cast<uint64_t>(rank));
  Tensor x = randn({4099}).to(dev);
  all_reduce(x, ReduceOp::Sum);
  Tensor mine = x.cpu();
  Tensor every = zeros({4099 * static_cast<int64_t>(world)});
  all_gather(every, mine);
  for (int r = 0; r < world; ++r)
    check(std::memcmp(every.data<float>() + r * 4099, mine.data<float>(), 4099 * sizeof(float)) == 0,
          "all_reduce: rank " + std::to_string(r) + "'s float32 sum has other bits than rank " + std::to_string(rank) +
              "'s");
  barrier();
}

void batch_ring(uint64_t seed) {
  const int rank = get_rank(), world = get_world_size();
  const Device dev = my_device();
  const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
  int salt = 0;
  for (DType dt : {DType::Float32, DType::Int64, DType::BFloat16}) {
    for (size_t n : {size_t{1}, size_t{1000}, size_t{100000}}) {
      ++salt;
      Tensor out = make(dt, rank_values(seed, rank, dt, n, salt)).to(dev);
      Tensor in = zeros({static_cast<int64_t>(n)}, TensorOptions(dt).device(dev));
      // The pattern that deadlocks when the recv goes out alone: recv(prev) first.
      batch_isend_irecv({P2POp::irecv(in, prev), P2POp::isend(out, next)});
      expect_close(label("ring exchange", dt, n), dt, values_of(in.cpu()), rank_values(seed, prev, dt, n, salt));
    }
  }
  // Two messages to and from every peer in one batch, in matching order.
  std::vector<P2POp> ops;
  std::vector<Tensor> got;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    for (int k = 0; k < 2; ++k) {
      got.push_back(zeros({3}, TensorOptions(kFloat32).device(dev)));
      ops.push_back(P2POp::irecv(got.back(), peer));
      ops.push_back(P2POp::isend(full({3}, 100.0 * rank + 10.0 * peer + k, TensorOptions(kFloat32).device(dev)), peer));
    }
  }
  for (auto& w : batch_isend_irecv(ops, {.async_op = true})) w->wait();
  size_t i = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    for (int k = 0; k < 2; ++k, ++i)
      expect_close("batch from rank " + std::to_string(peer), kFloat32, values_of(got[i].cpu()),
                   std::vector<double>(3, 100.0 * peer + 10.0 * rank + k));
  }
  barrier();
}

void ring(uint64_t seed) {
  auto g = default_group_ptr();
  const Device dev = my_device();
  manual_seed(seed);
  for (int64_t numel : {int64_t{1}, int64_t{5}, int64_t{1000}, int64_t{20011}}) {
    for (DType dtype : {kFloat32, kFloat64, kInt64}) {
      Tensor mine;
      for (int r = 0; r < g->size(); ++r) {
        Tensor x = randn({numel}, kFloat64).mul_(100.0).to(dtype);
        if (r == g->rank()) mine = x;
      }
      Tensor a = mine.to(dev), b = mine.to(dev), c = mine.clone();
      ring_all_reduce(*g, a, ReduceOp::Sum, {.chunk_bytes = 4096});
      g->all_reduce(b, ReduceOp::Sum)->wait();
      g->all_reduce(c, ReduceOp::Sum)->wait();  // Gloo, on the CPU
      const double tol = dtype == kFloat32 ? 1e-3 : (dtype == kFloat64 ? 1e-9 : 0.0);
      const double vs_backend = (a.cpu().to(kFloat64) - b.cpu().to(kFloat64)).abs().max().item<double>();
      const double vs_cpu = (a.cpu().to(kFloat64) - c.to(kFloat64)).abs().max().item<double>();
      check(vs_backend <= tol && vs_cpu <= tol,
            "ring_all_reduce on cuda, numel " + std::to_string(numel) + " " + dtype_name(dtype) + ": off by " +
                std::to_string(vs_backend) + " from NCCL's all_reduce, " + std::to_string(vs_cpu) + " from Gloo's");
    }
  }
}

void ddp(uint64_t seed) {
  manual_seed(seed);
  check_ddp_matches_one_process(default_group_ptr(), my_device(), 3);
}

void zero(uint64_t seed) {
  for (int stage : {1, 2}) {
    manual_seed(seed);
    check_zero_matches_adamw(default_group_ptr(), my_device(), 3, {.stage = stage});
  }
}

// Subgroups on CUDA tensors: each has an NCCL communicator of its own (a
// fresh unique id), beside the world's.
void subgroups() {
  const int rank = get_rank(), world = get_world_size();
  check(world == 4, "the subgroup mode runs on 4 ranks");
  const Device dev = my_device();
  auto evens = new_group({0, 2});
  auto odds = new_group({1, 3});
  ProcessGroup* mine = rank % 2 == 0 ? evens.get() : odds.get();
  Tensor t = full({5}, rank + 1.0, TensorOptions(kFloat32).device(dev));
  all_reduce(t, ReduceOp::Sum, {.group = mine});
  expect_close("all_reduce on a subgroup", kFloat32, values_of(t.cpu()),
               std::vector<double>(5, rank % 2 == 0 ? 1.0 + 3.0 : 2.0 + 4.0));
  Tensor w = full({3}, rank + 1.0, TensorOptions(kFloat32).device(dev));
  all_reduce(w);  // the world's communicator, after the subgroups'
  expect_close("all_reduce on the world", kFloat32, values_of(w.cpu()), std::vector<double>(3, 10.0));
  // The pair exchanges within its subgroup (group ranks 0 and 1).
  const int peer = 1 - mine->rank();
  Tensor out = full({4}, rank * 1.0, TensorOptions(kFloat32).device(dev));
  Tensor in = zeros({4}, TensorOptions(kFloat32).device(dev));
  batch_isend_irecv({P2POp::irecv(in, peer), P2POp::isend(out, peer)}, {.group = mine});
  expect_close("exchange on a subgroup", kFloat32, values_of(in.cpu()), std::vector<double>(4, (rank + 2) % 4));
}

// Each rank sends first, then receives, outside any group: on NCCL each call
// holds the communication stream until its peer's matching call runs, and
// the peer's recv is queued behind its own send.
void exchange(bool batched) {
  const int rank = get_rank(), peer = 1 - rank;
  check(get_world_size() == 2, "the exchange runs on 2 ranks");
  const Device dev = my_device();
  Tensor out = full({8}, rank + 1.0, TensorOptions(kFloat32).device(dev));
  Tensor in = zeros({8}, TensorOptions(kFloat32).device(dev));
  Tensor warm = ones({1}, TensorOptions(kFloat32).device(dev));
  all_reduce(warm);  // the communicator exists on both ranks
  barrier();  // (Gloo) both start together
  if (batched) {
    batch_isend_irecv({P2POp::isend(out, peer), P2POp::irecv(in, peer)});
    expect_close("batched exchange", kFloat32, values_of(in.cpu()), std::vector<double>(8, peer + 1.0));
    return;
  }
  auto& g = default_group();
  auto s = g.send(out, peer);
  auto r = g.recv(in, peer);
  try {
    s->wait();
    r->wait();
    in.cpu();  // the host waits for the stream: until the watchdog fails the send
    all_reduce(warm);
  } catch (const Error& e) {
    const std::string msg = e.what();
    check(msg.find("looks like a deadlock") != std::string::npos ||
              msg.find("closed its connection") != std::string::npos,
          "the error does not explain the deadlock: " + msg);
    std::cout << "CAUGHT: " << msg << std::endl;
    return;
  }
  throw std::runtime_error("the ungrouped send/send exchange did not fail");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const uint64_t seed = std::stoull(arg(argc, argv, "--seed", "1"));
  try {
    InitOptions init;
    init.group.timeout = std::chrono::seconds(60);
    init_process_group(init);
    if (mode == "collectives")
      collectives(seed);
    else if (mode == "batch_ring")
      batch_ring(seed);
    else if (mode == "ring")
      ring(seed);
    else if (mode == "ddp")
      ddp(seed);
    else if (mode == "zero")
      zero(seed);
    else if (mode == "subgroups")
      subgroups();
    else if (mode == "deadlock")
      exchange(false);
    else if (mode == "batched")
      exchange(true);
    else
      throw std::runtime_error("unknown mode '" + mode + "'");
    if (mode == "deadlock") {
      std::cout << "OK " << mode << std::endl;
      std::_Exit(0);  // the NCCL group is broken; the peer may be gone
    }
    barrier();
    destroy_process_group();
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << mode << ": " << e.what() << std::endl;
    return 1;
  }
  std::cout << "OK " << mode << std::endl;
  return 0;
}
