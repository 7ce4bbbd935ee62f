#pragma once
/// @file
/// FlatShardLayout: how ZeRO and FSDP lay a list of tensors out as one flat
/// vector cut into equal per-rank slices. The tensors sit end to end in their
/// given order; the vector is padded with zeros to a multiple of the world
/// size, so every rank's slice has the same length (reduce_scatter and
/// all_gather need equal chunks) and rank r owns
/// [r * shard_size, (r + 1) * shard_size).
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace anvil::distributed {

/// How a list of tensors maps to one flat buffer padded to N equal shards (see the file comment).
class FlatShardLayout {
 public:
  FlatShardLayout() = default;
  /// `what` names the caller in errors.
  FlatShardLayout(const std::vector<Tensor>& tensors, int world_size, const char* what);

  int world_size() const { return world_size_; }  ///< Number of shards (ranks).
  int64_t total_numel() const { return total_; }  ///< without padding
  int64_t shard_size() const { return shard_size_; }  ///< per rank
  int64_t padded_numel() const { return shard_size_ * world_size_; }  ///< total_numel rounded up to N shards.
  /// Where rank `rank`'s shard starts in the flat buffer.
  int64_t shard_begin(int rank) const { return shard_size_ * rank; }
  size_t num_tensors() const { return shapes_.size(); }  ///< Number of tensors laid out.
  const Shape& shape(size_t i) const { return shapes_[i]; }  ///< Tensor `i`'s shape.
  int64_t offset(size_t i) const { return offsets_[i]; }  ///< Tensor `i`'s offset in the flat buffer.

  /// Writes `tensors` (one per laid-out tensor; an undefined one counts as
  /// zeros) into `flat` (padded_numel elements), and zeros the padding.
  void flatten_into(const std::vector<Tensor>& tensors, Tensor& flat) const;
  /// One view of `flat` per laid-out tensor, with its shape.
  std::vector<Tensor> views_of(const Tensor& flat) const;
  Tensor view_of(const Tensor& flat, size_t i) const;  ///< A view of tensor `i` inside `flat`.

 private:
  int world_size_ = 1;
  int64_t total_ = 0, shard_size_ = 0;
  std::vector<Shape> shapes_;
  std::vector<int64_t> offsets_;
};

}  // namespace anvil::distributed
