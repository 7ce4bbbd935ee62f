// The PS port under bad input: garbage, oversized frame headers, a worker
// that dies mid-frame or goes silent, a wrong model, a taken worker id, a
// push for the wrong step, a bad job environment. Each costs one connection
// (or is a clear error to the worker) and the server carries on serving.
#include <gtest/gtest.h>

#include <cstring>

#include "distributed/net/socket.h"
#include "tests/distributed/harness.h"
#include "tests/distributed/parameter_server/ps_test_util.h"

namespace anvil::distributed::ps {
namespace {

using namespace testing;
using anvil::test::contains;
using anvil::test::error_of;

int raw_connect(int port) {
  std::string error;
  const int fd = net::connect_until("127.0.0.1", port, Clock::now() + std::chrono::seconds(5), &error);
  EXPECT_GE(fd, 0) << error;
  return fd;
}

// True when the server closed the connection (read gives EOF) within 5 s.
bool closed_by_server(int fd) {
  char c;
  bool timed_out = false;
  const bool got = net::recv_all(fd, &c, 1, Clock::now() + std::chrono::seconds(5), &timed_out);
  // An ERROR frame may come first; read until EOF.
  if (got) {
    std::vector<char> sink(70000);
    while (net::recv_all(fd, sink.data(), 1, Clock::now() + std::chrono::seconds(5), &timed_out)) {
    }
  }
  return !timed_out;
}

// After any abuse, a real worker still trains one step.
void expect_still_serves(Job& job, nn::Module& model, int worker) {
  ParameterServerClient client(model.parameters(), job.plan, job.client_options(worker));
  client.pull();
  for (auto& p : model.parameters()) p.set_grad(zeros_like(p));
  EXPECT_EQ(client.push().applied, job.plan.num_ps);
  client.finish();
}

ServerOptions quick(Mode mode, int workers) {
  ServerOptions o;
  o.mode = mode;
  o.num_workers = workers;
  o.make_optimizer = sgd(0.1);
  o.message_timeout = std::chrono::milliseconds(300);
  o.idle_timeout = std::chrono::seconds(10);
  o.rejoin_grace = std::chrono::milliseconds(50);
  return o;
}

TEST(ParameterServerHostile, GarbageHugeFramesAndCutFramesCostOneConnection) {
  auto model = make_mlp(1);
  Job job(model->parameters(), 1, quick(Mode::Async, 2));
  const int port = job.addresses[0].port;
  {  // not our protocol at all
    int fd = raw_connect(port);
    const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789";
    ASSERT_TRUE(net::send_all(fd, junk, sizeof junk, Clock::now() + std::chrono::seconds(5)));
    EXPECT_TRUE(closed_by_server(fd));
    net::close_fd(fd);
  }
  {  // a HELLO, then a PUSH header announcing 1 TiB: refused before any allocation
    int fd = raw_connect(port);
    FrameHeader h;
    h.type = static_cast<uint32_t>(FrameType::Hello);
    h.version = job.plan.fingerprint();
    h.arg = 0;
    ASSERT_TRUE(net::send_all(fd, &h, sizeof h, Clock::now() + std::chrono::seconds(5)));
    FrameHeader welcome;
    ASSERT_TRUE(net::recv_all(fd, &welcome, sizeof welcome, Clock::now() + std::chrono::seconds(5)));
    EXPECT_EQ(welcome.type, static_cast<uint32_t>(FrameType::Welcome));
    h.type = static_cast<uint32_t>(FrameType::Push);
    h.version = 0;
    h.payload_bytes = uint64_t{1} << 40;
    ASSERT_TRUE(net::send_all(fd, &h, sizeof h, Clock::now() + std::chrono::seconds(5)));
    EXPECT_TRUE(closed_by_server(fd));
    net::close_fd(fd);
  }
  {  // a worker that dies in the middle of a PUSH payload
    int fd = raw_connect(port);
    FrameHeader h;
    h.type = static_cast<uint32_t>(FrameType::Hello);
    h.version = job.plan.fingerprint();
    h.arg = 1;
    ASSERT_TRUE(net::send_all(fd, &h, sizeof h, Clock::now() + std::chrono::seconds(5)));
    FrameHeader welcome;
    ASSERT_TRUE(net::recv_all(fd, &welcome, sizeof welcome, Clock::now() + std::chrono::seconds(5)));
    h.type = static_cast<uint32_t>(FrameType::Push);
    h.payload_bytes = static_cast<uint64_t>(job.plan.shard_numel(0)) * 4;
    ASSERT_TRUE(net::send_all(fd, &h, sizeof h, Clock::now() + std::chrono::seconds(5)));
    const float half[4] = {1, 2, 3, 4};
    ASSERT_TRUE(net::send_all(fd, half, sizeof half, Clock::now() + std::chrono::seconds(5)));
    net::close_fd(fd);
  }
  {  // one that stops in the middle of a header and stays silent: dropped after message_timeout
    int fd = raw_connect(port);
    const char part[5] = {0x41, 0x50, 0x53, 0x31, 0x01};
    ASSERT_TRUE(net::send_all(fd, part, sizeof part, Clock::now() + std::chrono::seconds(5)));
    EXPECT_TRUE(closed_by_server(fd));
    net::close_fd(fd);
  }
  // Nothing above was applied; both slots (0 and 1 were claimed by the raw
  // connections) are free again and real workers train.
  EXPECT_EQ(job.servers[0]->stats().version, 0);
  auto w0 = make_mlp(2), w1 = make_mlp(3);
  for (int tries = 0; tries < 100 && contains(error_of([&] { expect_still_serves(job, *w1, 1); }), "already"); ++tries)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  expect_still_serves(job, *w0, 0);
  EXPECT_EQ(job.servers[0]->stats().version, 2);
  EXPECT_GE(job.servers[0]->stats().workers_lost, 2);
}

TEST(ParameterServerHostile, WorkerErrorsAreClear) {
  auto model = make_mlp(1);
  Job job(model->parameters(), 2, quick(Mode::Sync, 2));
  // A different model: the layout fingerprints differ.
  auto other = std::make_shared<nn::Linear>(5, 4);
  const ShardPlan other_plan = make_shard_plan(numels_of(other->parameters()), 2);
  EXPECT_TRUE(
      contains(error_of([&] { ParameterServerClient c(other->parameters(), other_plan, job.client_options(0)); }),
               "model layout"));
  // A worker id out of range, and one already connected.
  EXPECT_TRUE(contains(error_of([&] { ParameterServerClient c(model->parameters(), job.plan, job.client_options(2)); }),
                       "worker id 2 is not in 0..1"));
  ParameterServerClient first(model->parameters(), job.plan, job.client_options(0));
  EXPECT_TRUE(contains(error_of([&] { ParameterServerClient c(model->parameters(), job.plan, job.client_options(0)); }),
                       "worker id 0 is already connected"));
  // A plan that does not fit the model, and a wrong number of addresses.
  EXPECT_TRUE(contains(error_of([&] { ParameterServerClient c(other->parameters(), job.plan, job.client_options(1)); }),
                       "parameters but the model has"));
  ClientOptions one_address = job.client_options(1);
  one_address.servers.pop_back();
  EXPECT_TRUE(contains(error_of([&] { ParameterServerClient c(model->parameters(), job.plan, one_address); }),
                       "1 server addresses for a plan over 2"));
  // Nobody listening: a bounded wait, then the address in the error.
  ClientOptions nowhere = job.client_options(1);
  nowhere.servers[1].port = anvil::test::free_port();
  nowhere.connect_timeout = std::chrono::milliseconds(200);
  EXPECT_TRUE(contains(error_of([&] { ParameterServerClient c(model->parameters(), job.plan, nowhere); }),
                       "cannot reach PS 1"));
  // Options the server refuses.
  ServerOptions no_optimizer = quick(Mode::Sync, 1);
  no_optimizer.make_optimizer = nullptr;
  EXPECT_TRUE(contains(error_of([&] { ParameterServer s(model->parameters(), job.plan, 0, no_optimizer); }),
                       "make_optimizer is required"));
  EXPECT_TRUE(contains(error_of([&] { ParameterServer s(other->parameters(), job.plan, 0, quick(Mode::Sync, 1)); }),
                       "parameters but"));
}

TEST(ParameterServerHostile, SyncPushForAnotherStepIsRefused) {
  auto model = make_mlp(1);
  Job job(model->parameters(), 1, quick(Mode::Sync, 1));
  int fd = raw_connect(job.addresses[0].port);
  FrameHeader h;
  h.type = static_cast<uint32_t>(FrameType::Hello);
  h.version = job.plan.fingerprint();
  ASSERT_TRUE(net::send_all(fd, &h, sizeof h, Clock::now() + std::chrono::seconds(5)));
  Frame f;
  ASSERT_EQ(recv_frame(fd, &f, 0, Clock::now() + std::chrono::seconds(5), std::chrono::seconds(5)).status,
            RecvStatus::Ok);
  std::vector<float> grad(static_cast<size_t>(job.plan.shard_numel(0)), 1.0f);
  ASSERT_TRUE(
      send_frame(fd, FrameType::Push, 7, 0, grad.data(), grad.size() * 4, Clock::now() + std::chrono::seconds(5)));
  ASSERT_EQ(recv_frame(fd, &f, 0, Clock::now() + std::chrono::seconds(5), std::chrono::seconds(5)).status,
            RecvStatus::Ok);
  EXPECT_EQ(f.type, FrameType::Error);
  EXPECT_TRUE(contains(std::string(f.payload.begin(), f.payload.end()), "server is only at 0"));
  net::close_fd(fd);
  EXPECT_EQ(job.servers[0]->stats().version, 0);
}

TEST(ParameterServerJob, RolesFromTheEnvironmentAndTheirErrors) {
  std::map<std::string, std::string> env{
      {"ANVIL_PS_ROLE", "worker"}, {"ANVIL_NUM_PS", "2"}, {"ANVIL_NUM_WORKERS", "3"}, {"ANVIL_WORKER_INDEX", "2"}};
  auto lookup = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  JobRole r = job_role_from(lookup);
  EXPECT_FALSE(r.is_ps);
  EXPECT_EQ(r.index, 2);
  EXPECT_EQ(r.num_ps, 2);
  EXPECT_EQ(r.num_workers, 3);
  env["ANVIL_WORKER_INDEX"] = "3";
  EXPECT_TRUE(
      contains(error_of([&] { job_role_from(lookup); }), "ANVIL_WORKER_INDEX 3 is not below ANVIL_NUM_WORKERS 3"));
  env["ANVIL_PS_ROLE"] = "ps";
  env["ANVIL_PS_INDEX"] = "1";
  r = job_role_from(lookup);
  EXPECT_TRUE(r.is_ps);
  EXPECT_EQ(r.index, 1);
  env["ANVIL_PS_INDEX"] = "1x";
  EXPECT_TRUE(contains(error_of([&] { job_role_from(lookup); }), "ANVIL_PS_INDEX must be an integer, got '1x'"));
  env["ANVIL_PS_ROLE"] = "chief";
  EXPECT_TRUE(contains(error_of([&] { job_role_from(lookup); }), "must be 'ps' or 'worker', got 'chief'"));
  env.erase("ANVIL_PS_ROLE");
  EXPECT_TRUE(contains(error_of([&] { job_role_from(lookup); }), "anvil-run --ps N"));
  env["ANVIL_PS_ROLE"] = "worker";
  env["ANVIL_NUM_PS"] = "0";
  EXPECT_TRUE(contains(error_of([&] { job_role_from(lookup); }), "ANVIL_NUM_PS must be at least 1"));
  env["MASTER_ADDR"] = "127.0.0.1";
  EXPECT_EQ(advertised_host(lookup), "127.0.0.1");
  env["ANVIL_PS_HOST"] = "ps-host-3";
  EXPECT_EQ(advertised_host(lookup), "ps-host-3");
}

}  // namespace
}  // namespace anvil::distributed::ps
