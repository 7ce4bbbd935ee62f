#pragma once
// Lets Gloo's rendezvous (gloo::rendezvous::Context::connectFullMesh) use
// one of our Stores (internal). Keys get a prefix so several process groups
// can rendezvous through one store without seeing each other's addresses.
#include <gloo/rendezvous/store.h>

#include <memory>

#include "distributed/store/store.h"

namespace anvil::distributed {

class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(std::shared_ptr<distributed::Store> store, std::string prefix)
      : store_(std::move(store)), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(prefix_ + key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    Bytes b = store_->get(prefix_ + key);
    return {b.begin(), b.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, store_->timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const auto& k : keys) full.push_back(prefix_ + k);
    store_->wait(full, timeout);
  }

 private:
  std::shared_ptr<distributed::Store> store_;
  std::string prefix_;
};

}  // namespace anvil::distributed
