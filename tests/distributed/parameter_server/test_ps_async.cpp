// Asynchronous parameter-server training: pushes applied as they come with
// bounded staleness (never exceeded, by the server's record and by what each
// worker was told), convergence on a random linear regression, and a worker
// that dies mid-training (the others finish; a restart with its id rejoins
// from the current parameters).
#include <gtest/gtest.h>

#include <atomic>

#include "core/autograd/grad_mode.h"
#include "tests/distributed/parameter_server/ps_test_util.h"

namespace anvil::distributed::ps {
namespace {

using namespace testing;

// y = x W* + b* + noise, one model shared by every worker (each draws its own rows).
struct Regression {
  Tensor w_true, b_true;
  explicit Regression(uint64_t seed) {
    manual_seed(seed);
    w_true = randn({8, 2});
    b_true = randn({2});
  }
  std::pair<Tensor, Tensor> batch(int64_t rows) const {
    Tensor x = randn({rows, 8});
    return {x, matmul(x, w_true) + b_true + 0.01 * randn({rows, 2})};
  }
  double loss(nn::Module& model) const {
    NoGradGuard g;
    manual_seed(999);
    auto [x, y] = batch(256);
    return mse_loss(model.forward(x), y).item<double>();
  }
};

std::shared_ptr<nn::Module> linear_model(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Linear>(8, 2);
}

// One worker's loop: pull, gradient on a fresh batch, push; a refused push is
// retried after a fresh pull. Returns the largest staleness a PS reported for
// an applied push.
struct WorkerLog {
  int64_t max_applied_staleness = 0;
  int refused = 0;
};
WorkerLog train(ParameterServerClient& client, nn::Module& model, const Regression& task, int steps,
                int max_staleness) {
  WorkerLog log;
  for (int s = 0; s < steps; ++s) {
    client.pull();
    for (auto& p : model.parameters()) p.set_grad(Tensor());
    auto [x, y] = task.batch(16);
    mse_loss(model.forward(x), y).backward();
    const PushResult r = client.push();
    log.refused += r.refused;
    log.max_applied_staleness = std::max(log.max_applied_staleness, r.max_applied_staleness);
    if (r.refused > 0) {
      EXPECT_GT(r.max_staleness, max_staleness);
    }
  }
  return log;
}

TEST(ParameterServerAsync, ConvergesAndNeverExceedsTheStalenessBound) {
  for (int bound : {0, 2}) {
    SCOPED_TRACE("max_staleness=" + std::to_string(bound));
    const Regression task(21 + static_cast<uint64_t>(bound));
    auto init = linear_model(22);
    const double initial_loss = task.loss(*init);
    const int workers = 4, steps = 60;
    Job job(init->parameters(), 2,
            {.mode = Mode::Async, .num_workers = workers, .max_staleness = bound, .make_optimizer = sgd(0.2)});
    std::vector<WorkerLog> logs(workers);
    run_workers(workers, [&](int w) {
      auto model = linear_model(30 + static_cast<uint64_t>(w));
      ParameterServerClient client(model->parameters(), job.plan, job.client_options(w));
      logs[static_cast<size_t>(w)] = train(client, *model, task, steps, bound);
      client.finish();
    });
    job.wait_until_done();
    int refused = 0;
    for (const auto& l : logs) {
      EXPECT_LE(l.max_applied_staleness, bound);
      refused += l.refused;
    }
    int64_t server_refused = 0;
    for (auto& s : job.servers) {
      const ServerStats st = s->stats();
      EXPECT_LE(st.max_applied_staleness, bound);
      EXPECT_EQ(st.pushes_applied + st.stale_refused, int64_t{workers} * steps);
      EXPECT_EQ(st.version, st.pushes_applied);  // async: one update per applied push
      int64_t histogram_total = 0;
      for (int64_t c : st.staleness_histogram) histogram_total += c;
      EXPECT_EQ(histogram_total, st.pushes_applied);
      EXPECT_GT(st.pushes_applied, steps);  // most pushes land
      server_refused += st.stale_refused;
    }
    EXPECT_EQ(server_refused, refused);
    auto trained = linear_model(22);
    {
      NoGradGuard g;
      const auto params = job.parameters();
      for (size_t i = 0; i < params.size(); ++i) trained->parameters()[i].copy_(params[i]);
    }
    const double final_loss = task.loss(*trained);
    EXPECT_LT(final_loss, 0.05 * initial_loss) << "initial " << initial_loss << " final " << final_loss;
  }
}

TEST(ParameterServerAsync, DeadWorkerDoesNotStopTrainingAndARestartRejoins) {
  const Regression task(41);
  auto init = linear_model(42);
  const double initial_loss = task.loss(*init);
  const int workers = 3, steps = 40;
  Job job(init->parameters(), 2,
          {.mode = Mode::Async, .num_workers = workers, .max_staleness = 3, .make_optimizer = sgd(0.2)});
  std::atomic<int64_t> version_at_death{-1};
  int64_t version_at_rejoin = -1;
  run_workers(workers, [&](int w) {
    auto model = linear_model(50 + static_cast<uint64_t>(w));
    if (w != 1) {
      ParameterServerClient client(model->parameters(), job.plan, job.client_options(w));
      train(client, *model, task, steps, 3);
      client.finish();
      return;
    }
    {
      ParameterServerClient client(model->parameters(), job.plan, job.client_options(1));
      train(client, *model, task, 5, 3);
      version_at_death = client.versions()[0];
      client.abort();  // dies: sockets closed mid-job, no BYE
    }
    // Its slot is taken again only after the server noticed; until then the id is busy.
    for (int tries = 0;; ++tries) {
      try {
        auto fresh = linear_model(99);  // a restarted process starts from scratch
        ParameterServerClient client(fresh->parameters(), job.plan, job.client_options(1));
        client.pull();
        version_at_rejoin = client.versions()[0];
        train(client, *fresh, task, 10, 3);
        client.finish();
        return;
      } catch (const anvil::Error& e) {
        if (tries > 200 || std::string(e.what()).find("already connected") == std::string::npos) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  });
  job.wait_until_done();
  EXPECT_GE(version_at_rejoin, version_at_death.load());
  for (auto& s : job.servers) {
    const ServerStats st = s->stats();
    EXPECT_EQ(st.workers_lost, 1);
    EXPECT_EQ(st.rejoins, 1);
    EXPECT_LE(st.max_applied_staleness, 3);
    EXPECT_EQ(st.pushes_applied + st.stale_refused, int64_t{2} * steps + 5 + 10);
  }
  auto trained = linear_model(42);
  {
    NoGradGuard g;
    const auto params = job.parameters();
    for (size_t i = 0; i < params.size(); ++i) trained->parameters()[i].copy_(params[i]);
  }
  EXPECT_LT(task.loss(*trained), 0.05 * initial_loss);
}

TEST(ParameterServerAsync, AWorkerThatNeverReturnsIsWaitedForOnlyTheGrace) {
  auto init = linear_model(60);
  Job job(init->parameters(), 1,
          {.mode = Mode::Async,
           .num_workers = 2,
           .make_optimizer = sgd(0.05),
           .rejoin_grace = std::chrono::milliseconds(150)});
  auto a = linear_model(61), b = linear_model(62);
  ParameterServerClient ca(a->parameters(), job.plan, job.client_options(0));
  ParameterServerClient cb(b->parameters(), job.plan, job.client_options(1));
  cb.abort();
  ca.finish();
  const auto start = std::chrono::steady_clock::now();
  job.wait_until_done();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(job.servers[0]->stats().workers_lost, 1);
}

}  // namespace
}  // namespace anvil::distributed::ps

namespace anvil::distributed::ps {
namespace {

using namespace testing;

// Staleness made by hand: B's update lands between A's pull and A's push.
TEST(ParameterServerAsync, StalenessIsCountedAndTheBoundIsExact) {
  for (int bound : {0, 1}) {
    SCOPED_TRACE("max_staleness=" + std::to_string(bound));
    auto init = linear_model(70);
    Job job(init->parameters(), 2,
            {.mode = Mode::Async, .num_workers = 2, .max_staleness = bound, .make_optimizer = sgd(0.1)});
    auto a = linear_model(71), b = linear_model(72);
    ParameterServerClient ca(a->parameters(), job.plan, job.client_options(0));
    ParameterServerClient cb(b->parameters(), job.plan, job.client_options(1));
    for (auto* m : {a.get(), b.get()})
      for (auto& p : m->parameters()) p.set_grad(ones_like(p));
    ca.pull();
    cb.pull();
    const PushResult rb = cb.push();
    EXPECT_EQ(rb.applied, 2);
    EXPECT_EQ(rb.max_staleness, 0);
    const PushResult ra = ca.push();  // computed at version 0, the PS ranks are at 1
    EXPECT_EQ(ra.max_staleness, 1);
    EXPECT_EQ(ra.applied, bound >= 1 ? 2 : 0);
    EXPECT_EQ(ra.refused, bound >= 1 ? 0 : 2);
    ca.pull();  // the refused worker re-pulls and is current again
    EXPECT_EQ(ca.push().max_staleness, 0);
    for (auto& s : job.servers) {
      EXPECT_EQ(s->stats().stale_refused, bound >= 1 ? 0 : 1);
      EXPECT_EQ(s->stats().max_applied_staleness, bound >= 1 ? 1 : 0);
    }
    ca.finish();
    cb.finish();
    job.wait_until_done();
  }
}

}  // namespace
}  // namespace anvil::distributed::ps
