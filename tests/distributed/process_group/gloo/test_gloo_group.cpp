// GlooProcessGroup and init_process_group in one process (ranks as
// threads): argument checks and their messages, the environment parsing.
// The multi-process behaviour is in ../test_launch_collectives.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <thread>

#include "core/factory.h"
#include "distributed/distributed.h"
#include "harness.h"

namespace {

using namespace anvil;
using namespace anvil::distributed;
using namespace std::chrono_literals;

using anvil::test::contains;
using anvil::test::error_of;

// Runs body(rank, group) on `world` threads that share one TCPStore.
void with_groups(int world, const std::function<void(int, ProcessGroup&)>& body,
                 ProcessGroupOptions options = {.timeout = 10s}) {
  auto server = std::make_shared<TCPStore>(TCPStoreOptions{.port = 0, .is_server = true, .timeout = 10s});
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        std::shared_ptr<Store> store = server;
        if (r > 0) store = std::make_shared<TCPStore>(TCPStoreOptions{.port = server->port(), .timeout = 10s});
        GlooProcessGroup group(store, r, world, options, "test/");
        body(r, group);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(GlooGroup, AllReduceAcrossThreads) {
  with_groups(2, [](int rank, ProcessGroup& g) {
    Tensor t = anvil::full({5}, static_cast<double>(rank + 1), kFloat32);
    g.all_reduce(t, ReduceOp::Sum)->wait();
    for (float v : t.to_vector<float>()) EXPECT_EQ(v, 3.0f);
    EXPECT_EQ(g.backend_name(), "gloo");
  });
}

TEST(GlooGroup, RejectsBadArgumentsBeforeCommunicating) {
  with_groups(2, [](int rank, ProcessGroup& g) {
    Tensor m = anvil::zeros({3, 4}, kFloat32);
    Tensor nc = m.t();
    std::string e = error_of([&] { g.all_reduce(nc); });
    EXPECT_TRUE(contains(e, "not contiguous")) << e;
    Tensor ints = anvil::zeros({4}, kInt32);
    e = error_of([&] { g.all_reduce(ints, ReduceOp::Avg); });
    EXPECT_TRUE(contains(e, "ReduceOp::Avg on int32")) << e;
    Tensor b = anvil::zeros({4}, kBool);
    e = error_of([&] { g.all_reduce(b); });
    EXPECT_TRUE(contains(e, "cannot reduce bool")) << e;
    e = error_of([&] { g.broadcast(m, 2); });
    EXPECT_TRUE(contains(e, "root 2")) << e;
    Tensor out = anvil::zeros({5}, kFloat32), in = anvil::zeros({3}, kFloat32);
    e = error_of([&] { g.all_gather(out, in); });
    EXPECT_TRUE(contains(e, "expected world size 2 x input numel 3 = 6")) << e;
    e = error_of([&] { g.send(in, rank); });
    EXPECT_TRUE(contains(e, "must be another rank")) << e;
    Tensor undefined;
    e = error_of([&] { g.all_reduce(undefined); });
    EXPECT_TRUE(contains(e, "undefined")) << e;
    g.barrier()->wait();  // still usable: nothing was sent
  });
}

TEST(GlooGroup, SendRecvHeaderMismatchNamesBothSides) {
  with_groups(2,
              [](int rank, ProcessGroup& g) {
                if (rank == 0) {
                  Tensor t = anvil::zeros({4}, kFloat32);
                  auto w = g.send(t, 1, 5);
                  try {
                    w->wait();  // may complete or fail: the receiver gave up on it
                  } catch (const Error&) {
                  }
                } else {
                  Tensor t = anvil::zeros({6}, kFloat32);
                  std::string e = error_of([&] { g.recv(t, 0, 5)->wait(); });
                  EXPECT_TRUE(contains(e, "the sender sent float32 numel 4")) << e;
                }
              },
              {.timeout = 3s});
}

TEST(GlooGroup, SingleRankIsAnIdentity) {
  with_groups(1, [](int, ProcessGroup& g) {
    Tensor t = anvil::full({3}, 2.0, kFloat64);
    g.all_reduce(t, ReduceOp::Avg)->wait();
    g.broadcast(t, 0)->wait();
    Tensor out = anvil::zeros({3}, kFloat64);
    g.all_gather(out, t)->wait();
    g.reduce_scatter(out, t)->wait();
    for (double v : out.to_vector<double>()) EXPECT_EQ(v, 2.0);
  });
}

// Environment parsing: set and restore variables around each check.
class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::pair<std::string, const char*>> vars) {
    for (auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      if (v)
        ::setenv(k.c_str(), v, 1);
      else
        ::unsetenv(k.c_str());
    }
  }
  ~EnvGuard() {
    for (auto& [k, v] : saved_) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(InitProcessGroup, MissingOrInvalidVariablesAreNamed) {
  {
    EnvGuard env({{"RANK", "0"}, {"WORLD_SIZE", nullptr}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}});
    std::string e = error_of([] { launch_env_from_environment(); });
    EXPECT_TRUE(contains(e, "WORLD_SIZE is not set")) << e;
    EXPECT_TRUE(contains(e, "anvil-run")) << e;
  }
  {
    EnvGuard env({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}});
    std::string e = error_of([] { launch_env_from_environment(); });
    EXPECT_TRUE(contains(e, "RANK=2 is not below WORLD_SIZE=2")) << e;
  }
  {
    EnvGuard env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "80x"}});
    std::string e = error_of([] { launch_env_from_environment(); });
    EXPECT_TRUE(contains(e, "MASTER_PORT='80x'")) << e;
  }
  {
    EnvGuard env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", nullptr}, {"MASTER_PORT", "1234"}});
    std::string e = error_of([] { launch_env_from_environment(); });
    EXPECT_TRUE(contains(e, "MASTER_ADDR is not set")) << e;
  }
  {
    EnvGuard env({{"RANK", "1"},
                  {"WORLD_SIZE", "4"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "2"},
                  {"MASTER_ADDR", "h"},
                  {"MASTER_PORT", "99"}});
    LaunchEnv le = launch_env_from_environment();
    EXPECT_EQ(le.rank, 1);
    EXPECT_EQ(le.world_size, 4);
    EXPECT_EQ(le.local_rank, 1);
    EXPECT_EQ(le.local_world_size, 2);
    EXPECT_EQ(le.master_addr, "h");
    EXPECT_EQ(le.master_port, 99);
  }
}

TEST(InitProcessGroup, SingleProcessDefaultGroup) {
  EnvGuard env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}});
  EXPECT_FALSE(is_initialized());
  EXPECT_TRUE(contains(error_of([] { default_group(); }), "init_process_group"));
  InitOptions o;
  o.store = std::make_shared<TCPStore>(TCPStoreOptions{.port = 0, .is_server = true, .timeout = 5s});
  init_process_group(o);
  EXPECT_TRUE(is_initialized());
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_world_size(), 1);
  EXPECT_EQ(default_group().backend_name(), "cpu:gloo,cuda:nccl");
  EXPECT_TRUE(contains(error_of([&] { init_process_group(o); }), "exists already"));
  Tensor t = anvil::full({4}, 3.0, kFloat32);
  auto w = all_reduce(t, ReduceOp::Sum, {.async_op = true});
  w->wait();
  EXPECT_TRUE(w->is_completed());
  barrier();
  destroy_process_group();
  EXPECT_FALSE(is_initialized());
}

}  // namespace
