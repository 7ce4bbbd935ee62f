// A rank of a parameter-server job started by `anvil-run --ps N`: the role
// comes from the environment (distributed/parameter_server/job.h).
//
//   dist_worker_parameter_server sync <steps>
//     Every worker trains an MLP on its shard of the same batches; at the
//     end each pulls the parameters and compares them with one process on
//     the whole batches (computed locally): "OK worker W matches ...".
//   dist_worker_parameter_server async <steps> [<die_at_step> [<rejoin_grace_ms>]]
//     Workers fit a random linear regression on their own data with
//     staleness bound 2. With die_at_step, worker 1 aborts at that step on
//     its first run (TORCHELASTIC_RESTART_COUNT 0) without saying goodbye;
//     restarted by anvil-run it rejoins from the current parameters.
// PS ranks print "OK ps I version V lost L rejoins R max_staleness S".
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/parameter_server/parameter_server.h"
#include "distributed/store/tcp_store.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"

using namespace anvil;
namespace ps = anvil::distributed::ps;

namespace {

constexpr int64_t kBatch = 12;
constexpr int kStaleness = 2;

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

std::shared_ptr<nn::Module> make_model(bool sync, uint64_t seed) {
  manual_seed(seed);
  if (!sync) return std::make_shared<nn::Linear>(8, 2);
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 6), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(6, 3));
}

std::unique_ptr<nn::optim::Optimizer> make_optimizer(bool sync, std::vector<Tensor> params) {
  if (sync)
    return std::make_unique<nn::optim::SGD>(std::move(params), nn::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  return std::make_unique<nn::optim::SGD>(std::move(params), nn::optim::SGDOptions{.lr = 0.2});
}

std::vector<int64_t> numels(const std::vector<Tensor>& params) {
  std::vector<int64_t> n;
  for (const Tensor& p : params) n.push_back(p.numel());
  return n;
}

// The job's batches, the same on every rank.
std::vector<std::pair<Tensor, Tensor>> sync_batches(int steps) {
  manual_seed(1234);
  std::vector<std::pair<Tensor, Tensor>> b;
  for (int s = 0; s < steps; ++s) {
    Tensor x = randn({kBatch, 5});
    b.push_back({x, randn({kBatch, 3})});
  }
  return b;
}

int run_ps(const ps::JobRole& role, bool sync, distributed::Store& store, int rejoin_grace_ms) {
  auto model = make_model(sync, 7);
  const ps::ShardPlan plan = ps::make_shard_plan(numels(model->parameters()), role.num_ps);
  ps::ServerOptions o;
  o.mode = sync ? ps::Mode::Sync : ps::Mode::Async;
  o.num_workers = role.num_workers;
  o.max_staleness = kStaleness;
  o.rejoin_grace = std::chrono::milliseconds(rejoin_grace_ms);
  o.make_optimizer = [sync](std::vector<Tensor> p) { return make_optimizer(sync, std::move(p)); };
  ps::ParameterServer server(model->parameters(), plan, role.index, o);
  const char* addr = std::getenv("MASTER_ADDR");
  ps::publish_server(store, role.index, {addr ? addr : "127.0.0.1", server.port()});
  server.wait_until_done(std::chrono::seconds(60));
  const ps::ServerStats st = server.stats();
  std::cout << "OK ps " << role.index << " version " << st.version << " lost " << st.workers_lost << " rejoins "
            << st.rejoins << " max_staleness " << st.max_applied_staleness << " refused " << st.stale_refused
            << std::endl;
  return 0;
}

// A client, retried while the PS still holds this id for a predecessor that
// died a moment ago (it frees the slot once it sees the connection close).
std::unique_ptr<ps::ParameterServerClient> connect(nn::Module& model, const ps::ShardPlan& plan,
                                                   const ps::ClientOptions& o) {
  for (int tries = 0;; ++tries) {
    try {
      return std::make_unique<ps::ParameterServerClient>(model.parameters(), plan, o);
    } catch (const anvil::Error& e) {
      if (tries >= 200 || std::string(e.what()).find("already connected") == std::string::npos) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

int run_sync_worker(const ps::JobRole& role, ps::ParameterServerClient& client, nn::Module& model, int steps) {
  const auto batches = sync_batches(steps);
  const int64_t per = kBatch / role.num_workers;
  for (int s = 0; s < steps; ++s) {
    client.pull();
    for (auto& p : model.parameters()) p.set_grad(Tensor());
    const auto& [x, y] = batches[static_cast<size_t>(s)];
    mse_loss(model.forward(x.narrow(0, role.index * per, per)), y.narrow(0, role.index * per, per)).backward();
    if (client.push().applied != role.num_ps) throw std::runtime_error("a synchronous push was not applied");
  }
  client.pull();
  client.finish();
  // One process on the whole batches, from the PS's starting point.
  auto ref = make_model(true, 7);
  auto opt = make_optimizer(true, ref->parameters());
  for (const auto& [x, y] : batches) {
    opt->zero_grad();
    mse_loss(ref->forward(x), y).backward();
    opt->step();
  }
  double diff = 0;
  for (size_t i = 0; i < ref->parameters().size(); ++i) {
    const auto a = ref->parameters()[i].to_vector<double>(), b = model.parameters()[i].to_vector<double>();
    for (size_t j = 0; j < a.size(); ++j) diff = std::max(diff, std::abs(a[j] - b[j]));
  }
  if (!(diff < 1e-5)) {
    std::cout << "FAIL: worker " << role.index << " differs from one process by " << diff << std::endl;
    return 1;
  }
  std::cout << "OK worker " << role.index << " matches one process (max diff " << diff << ")" << std::endl;
  return 0;
}

int run_async_worker(const ps::JobRole& role, ps::ParameterServerClient& client, nn::Module& model, int steps,
                     int die_at) {
  manual_seed(77);
  const Tensor w_true = randn({8, 2}), b_true = randn({2});
  manual_seed(500 + static_cast<uint64_t>(role.index) * 10 +
              static_cast<uint64_t>(env_int("TORCHELASTIC_RESTART_COUNT")));
  const bool first_run = env_int("TORCHELASTIC_RESTART_COUNT") == 0;
  client.pull();
  if (!first_run) std::cout << "rejoined at version " << client.versions()[0] << std::endl;
  int64_t max_staleness = 0;
  for (int s = 0; s < steps; ++s) {
    if (role.index == 1 && first_run && s == die_at) {
      std::cout << "dying at step " << s << std::endl;
      std::abort();  // no BYE: the PS sees the connection drop
    }
    client.pull();
    for (auto& p : model.parameters()) p.set_grad(Tensor());
    Tensor x = randn({16, 8});
    mse_loss(model.forward(x), matmul(x, w_true) + b_true).backward();
    max_staleness = std::max(max_staleness, client.push().max_applied_staleness);
  }
  client.pull();
  client.finish();
  NoGradGuard g;
  Tensor x = randn({256, 8});
  const double loss = mse_loss(model.forward(x), matmul(x, w_true) + b_true).item<double>();
  if (max_staleness > kStaleness || !(loss < 0.05)) {
    std::cout << "FAIL: worker " << role.index << " loss " << loss << " max staleness " << max_staleness << std::endl;
    return 1;
  }
  std::cout << "OK worker " << role.index << " loss " << loss << " max staleness " << max_staleness << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: dist_worker_parameter_server sync|async <steps> [<die_at_step> [<rejoin_grace_ms>]]\n";
    return 2;
  }
  const bool sync = std::string(argv[1]) == "sync";
  const int steps = std::atoi(argv[2]);
  const int die_at = argc > 3 ? std::atoi(argv[3]) : -1;
  const int rejoin_grace_ms = argc > 4 ? std::atoi(argv[4]) : 30000;
  try {
    const ps::JobRole role = ps::job_role_from_environment();
    distributed::TCPStoreOptions so;
    so.host = std::getenv("MASTER_ADDR");
    so.port = env_int("MASTER_PORT");
    so.is_server = env_int("RANK") == 0;  // rank 0 is PS 0: it lives as long as the job
    so.timeout = std::chrono::seconds(30);
    distributed::TCPStore store(so);
    if (role.is_ps) return run_ps(role, sync, store, rejoin_grace_ms);
    auto model = make_model(sync, 100 + static_cast<uint64_t>(role.index));  // replaced by the first pull
    const ps::ShardPlan plan = ps::make_shard_plan(numels(model->parameters()), role.num_ps);
    ps::ClientOptions o;
    o.worker_id = role.index;
    o.servers = ps::lookup_servers(store, role.num_ps);
    auto client = connect(*model, plan, o);
    return sync ? run_sync_worker(role, *client, *model, steps)
                : run_async_worker(role, *client, *model, steps, die_at);
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << e.what() << std::endl;
    return 1;
  }
}
