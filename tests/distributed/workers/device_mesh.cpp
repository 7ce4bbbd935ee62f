// dist_worker_device_mesh: one rank of a 4-process job, started by
// tests/distributed/process_group/test_device_mesh.cpp through anvil-run. Everything on
// the default world through the torch-style free functions:
// init_device_mesh("cpu", {2, 2}, {"dp", "tp"}) with all_reduce along each
// dimension, new_group with members and non-members busy at once, and
// all_to_all_single with uneven splits on the world, each checked against
// values recomputed for every rank from the seed.
//
//   dist_worker_device_mesh [--seed S]
#include <iostream>

#include "distributed/distributed.h"
#include "workers/worker_util.h"

using namespace anvil;
using namespace anvil::distributed;
using namespace anvil::test::worker;

namespace {

constexpr size_t kN = 24;

std::vector<double> values(uint64_t seed, int rank, int salt) {
  return rank_values(seed, rank, DType::Float64, kN, salt);
}

std::vector<double> sum_of(uint64_t seed, const std::vector<int>& ranks, int salt) {
  std::vector<double> s(kN, 0.0);
  for (int r : ranks) {
    std::vector<double> v = values(seed, r, salt);
    for (size_t i = 0; i < kN; ++i) s[i] += v[i];
  }
  return s;
}

void run(uint64_t seed) {
  const int rank = get_rank(), world = get_world_size();
  if (world != 4) throw std::runtime_error("run with 4 ranks");
  const int row = rank / 2, col = rank % 2;

  DeviceMesh mesh = init_device_mesh("cpu", {2, 2}, {"dp", "tp"});
  Tensor t = make(DType::Float64, values(seed, rank, 1));
  all_reduce(t, ReduceOp::Sum, {.group = mesh.get_group("tp").get()});
  expect_close("all_reduce along tp (row sum)", DType::Float64, values_of(t), sum_of(seed, {2 * row, 2 * row + 1}, 1));
  Tensor d = make(DType::Float64, values(seed, rank, 2));
  all_reduce(d, ReduceOp::Sum, {.group = mesh["dp"].get_group().get()});
  expect_close("all_reduce along dp (column sum)", DType::Float64, values_of(d), sum_of(seed, {col, col + 2}, 2));

  // {0, 3} all-gathers while {1, 2} all-reduce in a group of their own.
  auto corners = new_group({0, 3});
  auto middle = new_group({1, 2});
  if (corners->is_member()) {
    Tensor in = make(DType::Float64, values(seed, rank, 3));
    Tensor out = anvil::zeros({static_cast<int64_t>(2 * kN)}, kFloat64);
    all_gather(out, in, {.group = corners.get()});
    std::vector<double> want = values(seed, 0, 3), three = values(seed, 3, 3);
    want.insert(want.end(), three.begin(), three.end());
    expect_close("all_gather on {0, 3}", DType::Float64, values_of(out), want);
  } else {
    Tensor m = make(DType::Float64, values(seed, rank, 4));
    for (int i = 0; i < 3; ++i) all_reduce(m, ReduceOp::Max, {.group = middle.get()});
    std::vector<double> a = values(seed, 1, 4), b = values(seed, 2, 4);
    for (size_t i = 0; i < kN; ++i) a[i] = std::max(a[i], b[i]);
    expect_close("all_reduce Max on {1, 2}", DType::Float64, values_of(m), a);
  }

  // all_to_all_single on the world: rank i sends (i + j) % 3 elements to rank j,
  // taken from values(seed, i, 5) in order.
  auto count = [](int from, int to) { return static_cast<int64_t>((from + to) % 3); };
  std::vector<int64_t> in_splits, out_splits;
  for (int j = 0; j < world; ++j) {
    in_splits.push_back(count(rank, j));
    out_splits.push_back(count(j, rank));
  }
  int64_t in_total = 0, out_total = 0;
  for (int j = 0; j < world; ++j) in_total += in_splits[j], out_total += out_splits[j];
  std::vector<double> mine = values(seed, rank, 5);
  Tensor in = make(DType::Float64, std::vector<double>(mine.begin(), mine.begin() + in_total));
  Tensor out = anvil::zeros({out_total}, kFloat64);
  all_to_all_single(out, in, out_splits, in_splits);
  std::vector<double> want;
  for (int from = 0; from < world; ++from) {
    std::vector<double> theirs = values(seed, from, 5);
    int64_t offset = 0;
    for (int k = 0; k < rank; ++k) offset += count(from, k);
    want.insert(want.end(), theirs.begin() + offset, theirs.begin() + offset + count(from, rank));
  }
  expect_close("all_to_all_single on the world", DType::Float64, values_of(out), want);
  barrier();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = std::stoull(arg(argc, argv, "--seed", "1"));
  try {
    InitOptions init;
    init.group.timeout = std::chrono::seconds(30);
    init_process_group(init);
    run(seed);
    std::cout << "OK device_mesh rank " << get_rank() << std::endl;
    destroy_process_group();
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
