#pragma once
// A thread-safe map from a problem key (the integers that decide a library's
// algorithm choice) to the choice made for it: the heuristic is asked once
// per problem. Used by cuBLASLt matmul and cuDNN convolution. Host-only.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace anvil::cuda {

template <typename Choice> class AlgoCache {
 public:
  std::optional<Choice> find(const std::vector<int64_t>& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void insert(const std::vector<int64_t>& key, const Choice& c) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.emplace(key, c);
  }

 private:
  std::mutex mu_;
  std::map<std::vector<int64_t>, Choice> map_;
};

}  // namespace anvil::cuda
