#pragma once
/// @file
/// PowerSGD (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank
/// Gradient Compression for Distributed Optimization", NeurIPS 2019), as
/// PyTorch's powerSGD_hook. Each gradient of a bucket is viewed as a matrix M
/// (n = its first dimension, m = the rest) and sent as two thin factors:
///
///     P = M Q            (n x r; Q is m x r, the same on every rank)
///     all-reduce P, orthogonalize its columns (Gram-Schmidt)
///     Q = M^T P          (m x r)
///     all-reduce Q, divide by the world size
///     M_avg ~ P Q^T      (the average's projection on P's columns)
///
/// so a matrix costs r (n + m) elements instead of n m. Error feedback keeps
/// what the approximation left out -- this rank's (M + residual) minus the
/// result -- and adds it to the next step's gradient, so nothing is lost for
/// good: summed over steps, the applied updates follow the true sum. Warm
/// start reuses last step's Q as the starting point (one power iteration per
/// step refines it).
///
/// Matrices that would not shrink by min_compression_rate (1-D parameters
/// such as biases, small or thin matrices) are all-reduced uncompressed, in
/// one buffer with the P factors. Before start_powerSGD_iter steps every
/// bucket is all-reduced uncompressed (compression early in training hurts
/// accuracy most).
///
///     auto state = std::make_shared<PowerSGDState>(PowerSGDOptions{.matrix_approximation_rank = 2});
///     ddp->register_comm_hook(state, powersgd_hook);
#include <cstdint>
#include <map>

#include "distributed/comm_hooks/comm_hook.h"

namespace anvil::distributed {

/// PowerSGD's settings, as torch.distributed's PowerSGDState arguments.
struct PowerSGDOptions {
  /// r: the rank of each matrix's approximation (capped at min(n, m)).
  int64_t matrix_approximation_rank = 1;
  /// Steps of plain all-reduce before compression starts (PyTorch's default).
  int64_t start_powerSGD_iter = 1000;
  /// A matrix is compressed only when n m > min_compression_rate * r (n + m);
  /// 0 compresses every 2-D gradient (at full rank: exact, which tests use).
  double min_compression_rate = 2;
  bool use_error_feedback = true;  ///< carry each step's compression error into the next
  bool warm_start = true;  ///< reuse the last step's Q instead of a fresh random one
  /// Added to each column's norm before dividing (0: a zero column stays zero).
  double orthogonalization_epsilon = 0;
  /// Seeds the first Q; it must be the same on every rank.
  uint64_t random_seed = 0;
};

/// PowerSGD's state across steps: per-bucket error memory and low-rank factors (see the file comment).
class PowerSGDState {
 public:
  explicit PowerSGDState(PowerSGDOptions options = {});  ///< With `options`.

  const PowerSGDOptions& options() const { return options_; }  ///< The settings it was made with.
  /// Steps this state has seen (advanced at each step's last bucket).
  int64_t iteration() const { return iteration_; }
  /// Whether past start_powerSGD_iter (else buckets are all-reduced plainly).
  bool compressing() const { return iteration_ >= options_.start_powerSGD_iter; }
  /// This rank's residual for a bucket: what the last compressed step left
  /// out, added to the next step's gradient. Undefined before the bucket's
  /// first compressed step or without error feedback.
  Tensor error(size_t bucket_index) const;
  /// Elements of the bucket a compressed step sends: uncompressed tensors,
  /// then r (n + m) per compressed matrix. The bytes are this times the
  /// element size.
  static int64_t compressed_numel(const GradBucket& bucket, const PowerSGDOptions& options);

 private:
  friend BucketFutureHandle powersgd_hook(PowerSGDState& state, GradBucket& bucket);
  struct BucketMemory {
    Tensor error;  ///< flat, the bucket's numel
    Tensor q;  ///< the Q factors of the bucket's compressed matrices, back to back
  };

  PowerSGDOptions options_;
  std::map<size_t, BucketMemory> memory_;
  int64_t iteration_ = 0;
};

/// DDP hook: the bucket's matrices compressed to rank-r factors P Q^T and all-reduced as those (see the file comment).
BucketFutureHandle powersgd_hook(PowerSGDState& state, GradBucket& bucket);

}  // namespace anvil::distributed
