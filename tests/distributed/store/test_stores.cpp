// TCPStore and FileStore: the Store contract, timeouts, and clear errors.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "core/base/error.h"
#include "distributed/store/file_store.h"
#include "distributed/store/tcp_store.h"
#include "harness.h"

namespace {

using namespace anvil::distributed;
using namespace std::chrono_literals;

using anvil::test::contains;
using anvil::test::error_of;

std::shared_ptr<TCPStore> tcp_server(std::chrono::milliseconds timeout = 10s) {
  return std::make_shared<TCPStore>(
      TCPStoreOptions{.host = "127.0.0.1", .port = 0, .is_server = true, .timeout = timeout});
}
std::shared_ptr<TCPStore> tcp_client(int port, std::chrono::milliseconds timeout = 10s) {
  return std::make_shared<TCPStore>(TCPStoreOptions{.host = "127.0.0.1", .port = port, .timeout = timeout});
}

std::string temp_file() {
  auto dir = std::filesystem::temp_directory_path();
  std::random_device rd;
  return (dir / ("anvil_filestore_" + std::to_string(rd()) + "_" + std::to_string(rd()))).string();
}

// The same contract for both stores: two handles onto one store.
struct StorePair {
  std::shared_ptr<Store> a, b;
  std::string path;  // FileStore only
  ~StorePair() {
    if (!path.empty()) std::filesystem::remove(path);
  }
};

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") {
      auto server = tcp_server();
      s_.a = server;
      s_.b = tcp_client(server->port());
    } else {
      s_.path = temp_file();
      s_.a = std::make_shared<FileStore>(s_.path, 10s);
      s_.b = std::make_shared<FileStore>(s_.path, 10s);
    }
  }
  StorePair s_;
};

TEST_P(StoreContract, SetGetOverwriteBinary) {
  anvil::distributed::Bytes blob = {0, 1, 2, 255, 0, 7};
  s_.a->set("blob", blob);
  EXPECT_EQ(s_.b->get("blob"), blob);
  s_.b->set("k", std::string("first"));
  s_.b->set("k", std::string("second"));
  EXPECT_EQ(s_.a->get_string("k"), "second");
  s_.a->set("empty", anvil::distributed::Bytes{});
  EXPECT_TRUE(s_.b->get("empty").empty());
}

TEST_P(StoreContract, AddIsAtomicAcrossClients) {
  EXPECT_EQ(s_.a->add("counter", 5), 5);
  EXPECT_EQ(s_.b->add("counter", -2), 3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto& store = t % 2 ? s_.a : s_.b;
      for (int i = 0; i < 25; ++i) store->add("counter", 1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(s_.a->add("counter", 0), 103);
}

TEST_P(StoreContract, CheckAndWait) {
  EXPECT_FALSE(s_.a->check({"x"}));
  std::thread setter([&] {
    s_.b->set("x", std::string("1"));
    s_.b->set("y", std::string("2"));
  });
  s_.a->wait({"x", "y"});
  setter.join();
  EXPECT_TRUE(s_.a->check({"x", "y"}));
  EXPECT_FALSE(s_.a->check({"x", "nope"}));
}

TEST_P(StoreContract, GetBlocksUntilSet) {
  std::thread later([&] { s_.b->set("late", std::string("here")); });
  EXPECT_EQ(s_.a->get_string("late"), "here");
  later.join();
}

TEST_P(StoreContract, TimeoutsNameTheKey) {
  s_.a->set_timeout(200ms);
  std::string e = error_of([&] { s_.a->get("never_set"); });
  EXPECT_TRUE(contains(e, "never_set")) << e;
  EXPECT_TRUE(contains(e, "timed out")) << e;
  e = error_of([&] { s_.a->wait({"a_key", "b_key"}, 100ms); });
  EXPECT_TRUE(contains(e, "b_key")) << e;
  // The handle still works after a timeout.
  s_.a->set("after", std::string("ok"));
  EXPECT_EQ(s_.b->get_string("after"), "ok");
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract, ::testing::Values("tcp", "file"));

TEST(TCPStore, UnreachableMasterFailsQuicklyNamingHostAndPort) {
  int port = anvil::test::free_port();  // nobody listens there
  auto start = std::chrono::steady_clock::now();
  std::string e = error_of([&] { tcp_client(port, 500ms); });
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(contains(e, "127.0.0.1:" + std::to_string(port))) << e;
  EXPECT_TRUE(contains(e, "cannot reach")) << e;
  EXPECT_LT(took, 10s) << "bounded by the store's timeout";
}

TEST(TCPStore, ClientsGetAnErrorWhenTheServerGoesAway) {
  auto server = tcp_server();
  auto client = tcp_client(server->port(), 2s);
  client->set("k", std::string("v"));
  server.reset();
  std::string e = error_of([&] { client->get("k"); });
  EXPECT_TRUE(contains(e, "TCPStore")) << e;
}

TEST(TCPStore, ManyClientsWaitOnOneKey) {
  auto server = tcp_server();
  std::vector<std::thread> threads;
  std::atomic<int> got{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] {
      auto c = tcp_client(server->port());
      if (c->get_string("go") == "now") ++got;
    });
  server->set("go", std::string("now"));
  for (auto& t : threads) t.join();
  EXPECT_EQ(got.load(), 6);
}

TEST(TCPStore, PortInUseIsAClearError) {
  auto server = tcp_server();
  std::string e =
      error_of([&] { TCPStore second(TCPStoreOptions{.port = server->port(), .is_server = true, .timeout = 1s}); });
  EXPECT_TRUE(contains(e, "cannot listen on port " + std::to_string(server->port()))) << e;
}

TEST(FileStore, UnwritablePathIsAClearError) {
  std::string e = error_of([] { FileStore s("/nonexistent_dir/anvil/store", 1s); });
  EXPECT_TRUE(contains(e, "/nonexistent_dir/anvil/store")) << e;
}

}  // namespace
