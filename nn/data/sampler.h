#pragma once
/// @file
/// Samplers decide which example indices an epoch visits, in which order.
#include <cstdint>
#include <vector>

namespace anvil::nn::data {

/// Which example indices an epoch visits, in which order.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices of one epoch. The same (seed, epoch) gives the same order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

/// 0, 1, ..., size - 1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size) : size_(size) {}  ///< Over `size` examples.
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t size_;
};

/// A seeded permutation per epoch (Philox-based, so identical everywhere).
class RandomSampler : public Sampler {
 public:
  /// A new permutation of `size` indices per epoch, from `seed`.
  RandomSampler(int64_t size, uint64_t seed) : size_(size), seed_(seed) {}
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t size_;
  uint64_t seed_;
};

/// DistributedSampler's settings.
struct DistributedSamplerOptions {
  int64_t rank = 0;  ///< this rank
  int64_t world_size = 1;  ///< number of ranks
  bool shuffle = true;  ///< shuffle (with seed + epoch) before sharding
  uint64_t seed = 0;  ///< the shuffle seed, the same on every rank
  bool drop_last = false;  ///< drop the tail rather than pad by wrapping around
};
/// Shards a dataset across data-parallel ranks like PyTorch's
/// DistributedSampler: every rank gets ceil(size / world) indices (padding
/// by wrapping around, or dropping the tail with drop_last), the shards are
/// disjoint apart from that padding, and the shuffle depends on seed + epoch
/// only, so all ranks agree. Call set_epoch() (or pass the epoch) each epoch.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t size, const DistributedSamplerOptions& options);  ///< This rank's shard of `size` indices.
  std::vector<int64_t> indices(int64_t epoch) const override;
  void set_epoch(int64_t epoch) { epoch_ = epoch; }  ///< Sets the epoch indices() uses (a new shuffle order).
  std::vector<int64_t> indices() const { return indices(epoch_); }  ///< This rank's indices for the current epoch.
  int64_t num_samples() const { return num_samples_; }  ///< Indices per rank per epoch.

 private:
  int64_t size_;
  DistributedSamplerOptions o_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

/// A seeded random permutation of [0, n).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, uint64_t stream);

}  // namespace anvil::nn::data
