#include "nn/data/sampler.h"

#include <numeric>

#include "core/base/error.h"
#include "core/base/philox.h"

namespace anvil::nn::data {

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  // Fisher-Yates with Philox draws: draw k uses counter (stream << 32) + k.
  for (int64_t i = n - 1; i > 0; --i) {
    auto r = philox::philox4x32(seed, (stream << 32) + static_cast<uint64_t>(i));
    uint64_t bits = (uint64_t{r.x} << 32) | r.y;
    int64_t j = static_cast<int64_t>(bits % static_cast<uint64_t>(i + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> v(static_cast<size_t>(size_));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  return random_permutation(size_, seed_, static_cast<uint64_t>(epoch));
}

DistributedSampler::DistributedSampler(int64_t size, const DistributedSamplerOptions& o) : size_(size), o_(o) {
  ANVIL_CHECK(o.world_size >= 1 && o.rank >= 0 && o.rank < o.world_size, "DistributedSampler: rank ", o.rank,
              " is out of range for world size ", o.world_size);
  ANVIL_CHECK(size >= 0, "DistributedSampler: negative dataset size ", size);
  num_samples_ = o.drop_last ? size / o.world_size : (size + o.world_size - 1) / o.world_size;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> all;
  if (o_.shuffle) {
    all = random_permutation(size_, o_.seed, static_cast<uint64_t>(epoch));
  } else {
    all.resize(static_cast<size_t>(size_));
    std::iota(all.begin(), all.end(), 0);
  }
  int64_t total = num_samples_ * o_.world_size;
  if (!o_.drop_last)  // pad by wrapping so every rank gets the same count
    for (int64_t i = 0; static_cast<int64_t>(all.size()) < total && size_ > 0; ++i) all.push_back(all[i % size_]);
  all.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  for (int64_t i = o_.rank; i < total; i += o_.world_size) mine.push_back(all[i]);
  return mine;
}

}  // namespace anvil::nn::data
