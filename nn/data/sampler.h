#pragma once
/// @file
/// Samplers decide which example indices an epoch visits, in which order.
#include <cstdint>
#include <vector>

namespace anvil::nn::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices of one epoch. The same (seed, epoch) gives the same order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size) : size_(size) {}
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t size_;
};

/// A seeded permutation per epoch (Philox-based, so identical everywhere).
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t size, uint64_t seed) : size_(size), seed_(seed) {}
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t size_;
  uint64_t seed_;
};

/// Shards a dataset across data-parallel ranks like PyTorch's
/// DistributedSampler: every rank gets ceil(size / world) indices (padding
/// by wrapping around, or dropping the tail with drop_last), the shards are
/// disjoint apart from that padding, and the shuffle depends on seed + epoch
/// only, so all ranks agree. Call set_epoch() (or pass the epoch) each epoch.
struct DistributedSamplerOptions {
  int64_t rank = 0;
  int64_t world_size = 1;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t size, const DistributedSamplerOptions& options);
  std::vector<int64_t> indices(int64_t epoch) const override;
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  std::vector<int64_t> indices() const { return indices(epoch_); }
  int64_t num_samples() const { return num_samples_; }

 private:
  int64_t size_;
  DistributedSamplerOptions o_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

/// A seeded random permutation of [0, n).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t stream);

}  // namespace anvil::nn::data
