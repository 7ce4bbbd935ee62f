#pragma once
// Shared by the parameter-server tests: a small MLP, random regression data,
// a server with its options, and worker threads that train through a client.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/parameter_server/parameter_server.h"
#include "nn/layers/layers.h"
#include "nn/optim/optim.h"

namespace anvil::distributed::ps::testing {

inline std::shared_ptr<nn::Module> make_mlp(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 7), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(7, 3));
}

inline std::vector<int64_t> numels_of(const std::vector<Tensor>& params) {
  std::vector<int64_t> n;
  for (const Tensor& p : params) n.push_back(p.numel());
  return n;
}

inline std::vector<std::vector<double>> values(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.to_vector<double>());
  return out;
}

inline double max_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].size(), b[i].size());
    for (size_t j = 0; j < a[i].size() && j < b[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  }
  return m;
}

// The servers of one job, each listening on its own free port.
struct Job {
  ShardPlan plan;
  std::vector<std::unique_ptr<ParameterServer>> servers;
  std::vector<ServerAddress> addresses;

  Job(const std::vector<Tensor>& params, int num_ps, const ServerOptions& options) {
    plan = make_shard_plan(numels_of(params), num_ps);
    for (int i = 0; i < num_ps; ++i) {
      servers.push_back(std::make_unique<ParameterServer>(params, plan, i, options));
      addresses.push_back({"127.0.0.1", servers.back()->port()});
    }
  }
  ClientOptions client_options(int worker) const {
    ClientOptions o;
    o.worker_id = worker;
    o.servers = addresses;
    o.connect_timeout = std::chrono::seconds(10);
    o.reply_timeout = std::chrono::seconds(20);
    return o;
  }
  void wait_until_done() {
    for (auto& s : servers) s->wait_until_done(std::chrono::seconds(20));
  }
  // Every PS's parameters, back in model order.
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> out(plan.numels.size());
    for (size_t s = 0; s < servers.size(); ++s) {
      auto mine = servers[s]->parameters();
      for (size_t k = 0; k < mine.size(); ++k) out[static_cast<size_t>(plan.owned[s][k])] = mine[k];
    }
    return out;
  }
};

inline OptimizerFactory sgd(double lr, double momentum = 0.0) {
  return [=](std::vector<Tensor> p) -> std::unique_ptr<nn::optim::Optimizer> {
    return std::make_unique<nn::optim::SGD>(std::move(p), nn::optim::SGDOptions{.lr = lr, .momentum = momentum});
  };
}
inline OptimizerFactory adamw(double lr) {
  return [=](std::vector<Tensor> p) -> std::unique_ptr<nn::optim::Optimizer> {
    return std::make_unique<nn::optim::AdamW>(std::move(p), nn::optim::AdamWOptions{.lr = lr});
  };
}

// Runs body(worker) on one thread per worker; rethrows the first failure.
inline void run_workers(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int w = 0; w < n; ++w)
    threads.emplace_back([&, w] {
      try {
        body(w);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(w)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int w = 0; w < n; ++w) EXPECT_EQ(errors[static_cast<size_t>(w)], "") << "worker " << w;
}

}  // namespace anvil::distributed::ps::testing
