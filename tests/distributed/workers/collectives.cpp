// dist_worker_collectives: one rank of the runtime tests, started by
// tests/distributed/process_group/test_launch_collectives.cpp through anvil-run.
//
//   dist_worker_collectives MODE [--seed S] [--timeout-ms T]
//   collectives     every collective, every dtype, sync and async, checked
//                   against values recomputed for every rank from the seed
//   mismatch_size   rank 1 passes one element more; every rank must get the error
//   mismatch_dtype  rank 1 passes float64 where the others pass float32
//   die             rank 1 SIGKILLs itself mid-job; the others must fail cleanly
//   silent          rank 1 stays alive but skips a collective; the others time out
//   exit N R        rank R exits with status N; the others wait in a barrier
//   steps           all-reduce steps until killed (each checked, "step N ok"
//                   printed), paced 20 ms apart; for killing a node mid-job
//   print           lines on stdout and stderr, for the prefix test
//   latency         (not a test) time of a 1-element all_reduce with and without the header check
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "distributed/distributed.h"
#include "workers/worker_util.h"

using namespace anvil;
using namespace anvil::distributed;
using namespace anvil::test::worker;

namespace {

const std::vector<DType> kDTypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                    DType::Int32,   DType::Int64,   DType::UInt8};

double reduce(ReduceOp op, const std::vector<double>& xs) {
  double acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    if (op == ReduceOp::Sum || op == ReduceOp::Avg) acc += xs[i];
    if (op == ReduceOp::Max) acc = std::max(acc, xs[i]);
    if (op == ReduceOp::Min) acc = std::min(acc, xs[i]);
  }
  if (op == ReduceOp::Avg) acc /= static_cast<double>(xs.size());
  return acc;
}

std::string label(const std::string& op, DType dt, size_t n, bool async) {
  return op + " " + dtype_name(dt) + " n=" + std::to_string(n) + (async ? " async" : " sync");
}

void run_collectives(uint64_t seed, bool async) {
  const int rank = get_rank(), world = get_world_size();
  CallOptions call{.async_op = async};
  int salt = async ? 1000 : 0;
  std::vector<WorkHandle> pending;
  std::vector<std::function<void()>> checks;
  // Sync: check at once. Async: queue everything, wait at the end, then check
  // (exercises many collectives in flight on the worker thread).
  auto done = [&](WorkHandle w, std::function<void()> check) {
    if (async) {
      pending.push_back(std::move(w));
      checks.push_back(std::move(check));
    } else {
      if (!w->is_completed()) throw std::runtime_error("a sync collective returned an unfinished Work");
      check();
    }
  };
  for (DType dt : kDTypes) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{1000}}) {
      ++salt;
      auto all = [&](int s) {
        std::vector<std::vector<double>> v;
        for (int r = 0; r < world; ++r) v.push_back(rank_values(seed, r, dt, n, s));
        return v;
      };
      // all_reduce, every op (Avg only for floating dtypes).
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
        if (op == ReduceOp::Avg && !is_floating(dt)) continue;
        int s = salt * 10 + static_cast<int>(op);
        auto v = all(s);
        std::vector<double> want(n);
        for (size_t i = 0; i < n; ++i) {
          std::vector<double> xs;
          for (int r = 0; r < world; ++r) xs.push_back(v[r][i]);
          double e = reduce(op, xs);
          if (dt == DType::Int32 || dt == DType::Int64) e = std::round(e);
          want[i] = round_to(dt, e);
        }
        Tensor t = make(dt, v[rank]);
        auto w = all_reduce(t, op, call);
        done(w, [=] {
          expect_close(label(std::string("all_reduce ") + to_string(op), dt, n, async), dt, values_of(t), want);
        });
      }
      // broadcast from every root.
      for (int root = 0; root < world; ++root) {
        auto v = all(salt * 10 + 5 + root * 100);
        Tensor t = make(dt, v[rank]);
        auto w = broadcast(t, root, call);
        auto want = v[root];
        done(w, [=] {
          expect_close(label("broadcast root " + std::to_string(root), dt, n, async), dt, values_of(t), want);
        });
      }
      // all_gather.
      {
        auto v = all(salt * 10 + 6);
        Tensor in = make(dt, v[rank]);
        Tensor out = anvil::zeros({static_cast<int64_t>(n) * world}, dt);
        auto w = all_gather(out, in, call);
        std::vector<double> want;
        for (int r = 0; r < world; ++r) want.insert(want.end(), v[r].begin(), v[r].end());
        done(w, [=] { expect_close(label("all_gather", dt, n, async), dt, values_of(out), want); });
      }
      // reduce_scatter: Sum and Max.
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        std::vector<std::vector<double>> v;
        for (int r = 0; r < world; ++r) v.push_back(rank_values(seed, r, dt, n * world, salt * 10 + 7 + (int)op));
        Tensor in = make(dt, v[rank]);
        Tensor out = anvil::zeros({static_cast<int64_t>(n)}, dt);
        auto w = reduce_scatter(out, in, op, call);
        std::vector<double> want(n);
        for (size_t i = 0; i < n; ++i) {
          std::vector<double> xs;
          for (int r = 0; r < world; ++r) xs.push_back(v[r][rank * n + i]);
          want[i] = round_to(dt, reduce(op, xs));
        }
        done(w, [=] {
          expect_close(label(std::string("reduce_scatter ") + to_string(op), dt, n, async), dt, values_of(out), want);
        });
      }
      // send/recv around the ring: posted together, then waited.
      if (world > 1) {
        int next = (rank + 1) % world, prev = (rank + world - 1) % world;
        auto v = all(salt * 10 + 9);
        Tensor out = make(dt, v[rank]);
        Tensor in = anvil::zeros({static_cast<int64_t>(n)}, dt);
        auto s = send(out, next, 3, {.async_op = true});
        auto r = recv(in, prev, 3, {.async_op = true});
        s->wait();
        r->wait();
        expect_close(label("send/recv", dt, n, async), dt, values_of(in), v[prev]);
      }
    }
  }
  // A large float32 all_reduce: several Gloo segments (> 1 MiB).
  {
    size_t n = 300000;
    std::vector<std::vector<double>> v;
    for (int r = 0; r < world; ++r) v.push_back(rank_values(seed, r, DType::Float32, n, 99 + salt));
    Tensor t = make(DType::Float32, v[rank]);
    auto w = all_reduce(t, ReduceOp::Sum, call);
    std::vector<double> want(n, 0.0);
    for (int r = 0; r < world; ++r)
      for (size_t i = 0; i < n; ++i) want[i] += v[r][i];
    done(w, [=] {
      expect_close(label("all_reduce Sum (large)", DType::Float32, n, async), DType::Float32, values_of(t), want);
    });
  }
  done(barrier(call), [] {});
  for (auto& w : pending) w->wait();
  for (auto& c : checks) c();
}

void expect_error(const std::function<void()>& f, const std::string& must_contain) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find(must_contain) == std::string::npos)
      throw std::runtime_error("the error does not mention '" + must_contain + "': " + msg);
    std::cout << "CAUGHT: " << msg << std::endl;
    return;
  }
  throw std::runtime_error("expected an anvil::Error mentioning '" + must_contain + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  uint64_t seed = std::stoull(arg(argc, argv, "--seed", "1"));
  int timeout_ms = std::stoi(arg(argc, argv, "--timeout-ms", "30000"));
  try {
    InitOptions init;
    init.group.timeout = std::chrono::milliseconds(timeout_ms);
    if (mode == "print") {
      // No group needed: only the launcher's relaying is under test.
      const char* r = std::getenv("RANK");
      for (int i = 0; i < 3; ++i) {
        std::cout << "hello from rank " << r << " line " << i << std::endl;
        std::cerr << "warning from rank " << r << " line " << i << std::endl;
      }
      std::cout << "no newline at the end from rank " << r << std::flush;
      return 0;
    }
    init_process_group(init);
    const int rank = get_rank(), world = get_world_size();
    if (mode == "collectives") {
      run_collectives(seed, false);
      run_collectives(seed, true);
      // Integer Avg is refused before anything is sent (same on every rank).
      Tensor t = make(DType::Int64, {1, 2});
      expect_error([&] { all_reduce(t, ReduceOp::Avg); }, "Avg");
      barrier();
      std::cout << "OK collectives rank " << rank << " of " << world << std::endl;
    } else if (mode == "mismatch_size") {
      Tensor t = make(DType::Float32, std::vector<double>(rank == 1 ? 5 : 4, 1.0));
      expect_error([&] { all_reduce(t); }, "rank 1: all_reduce of float32 numel 5");
      // The group still works after a detected mismatch.
      Tensor ok = make(DType::Float32, {1.0});
      all_reduce(ok);
      expect_close("all_reduce after mismatch", DType::Float32, values_of(ok), {double(world)});
      std::cout << "OK mismatch rank " << rank << std::endl;
    } else if (mode == "mismatch_dtype") {
      Tensor t = make(rank == 1 ? DType::Float64 : DType::Float32, {1.0, 2.0, 3.0});
      expect_error([&] { all_reduce(t); }, "rank 1: all_reduce of float64");
      std::cout << "OK mismatch rank " << rank << std::endl;
    } else if (mode == "die") {
      Tensor t = make(DType::Float32, std::vector<double>(1 << 20, 1.0));
      all_reduce(t);  // everyone is connected and working
      if (rank == 1) {
        // Dies while its worker thread is starting the next collective.
        auto w = all_reduce(t, ReduceOp::Sum, {.async_op = true});
        std::raise(SIGKILL);
      }
      auto start = std::chrono::steady_clock::now();
      expect_error(
          [&] {
            for (int i = 0; i < 1000; ++i) all_reduce(t);
          },
          "GlooProcessGroup");
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      std::cout << "failed after " << ms.count() << " ms" << std::endl;
      // Later calls fail at once with the first error.
      expect_error([&] { all_reduce(t); }, "broken");
      std::cout << "OK survivor rank " << rank << std::endl;
      std::_Exit(0);  // the group cannot shut down cleanly without its peer
    } else if (mode == "silent") {
      auto store = default_store();
      Tensor t = make(DType::Float32, {1.0});
      all_reduce(t);
      if (rank == 1) {
        // Alive but not calling the collective: the others must time out.
        store->wait({"released"}, std::chrono::seconds(60));
        std::cout << "OK silent rank released" << std::endl;
        std::_Exit(0);
      }
      expect_error([&] { all_reduce(t); }, "GlooProcessGroup");
      if (store->add("timed_out", 1) == world - 1) store->set("released", std::string("1"));
      if (rank == 0) store->wait({"released"});  // keep serving the store until rank 1 read it
      std::cout << "OK timed out rank " << rank << std::endl;
      std::_Exit(0);
    } else if (mode == "steps") {
      // Bounded so a test that never kills us still ends (about 40 s).
      for (int step = 0; step < 2000; ++step) {
        Tensor t = make(DType::Float32, {double(rank + step)});
        all_reduce(t);
        const double want = double(world) * step + world * (world - 1) / 2.0;
        expect_close("step " + std::to_string(step), DType::Float32, values_of(t), {want});
        std::cout << "step " << step << " ok" << std::endl;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } else if (mode == "exit") {
      int code = std::stoi(argc > 2 ? argv[2] : "3");
      int who = std::stoi(argc > 3 ? argv[3] : "1");
      barrier();
      if (rank == who) {
        std::cout << "exiting with " << code << std::endl;
        std::_Exit(code);
      }
      // Blocks until the launcher stops us (or the group's timeout).
      barrier();
      Tensor t = make(DType::Float32, {1.0});
      for (int i = 0; i < 1000000; ++i) all_reduce(t);
    } else if (mode == "latency") {
      // Not a test: prints the cost of the consistency header per collective.
      Tensor t = make(DType::Float32, {1.0});
      for (bool check : {true, false}) {
        ProcessGroupOptions o;
        o.check_consistency = check;
        GlooProcessGroup g(default_store(), rank, world, o, check ? "lat_on/" : "lat_off/");
        for (int i = 0; i < 100; ++i) g.all_reduce(t)->wait();
        auto start = std::chrono::steady_clock::now();
        const int n = 2000;
        for (int i = 0; i < n; ++i) g.all_reduce(t)->wait();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / n;
        if (rank == 0)
          std::cout << "check_consistency=" << check << ": " << us << " us per 1-element all_reduce" << std::endl;
        g.barrier()->wait();
      }
    } else {
      std::cerr << "unknown mode '" << mode << "'" << std::endl;
      return 2;
    }
    destroy_process_group();
    return 0;
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << e.what() << std::endl;
    return 1;
  }
}
