#include "distributed/zero/flat_shard.h"

#include <algorithm>

#include "core/autograd/grad_mode.h"

namespace anvil::distributed {

FlatShardLayout::FlatShardLayout(const std::vector<Tensor>& tensors, int world_size, const char* what)
    : world_size_(world_size) {
  ANVIL_CHECK(world_size > 0, what, ": the world size must be positive, got ", world_size);
  for (const Tensor& t : tensors) {
    ANVIL_CHECK(t.defined(), what, ": got an undefined tensor to shard");
    shapes_.push_back(t.shape());
    offsets_.push_back(total_);
    total_ += t.numel();
  }
  // At least one element per rank, so an empty list still has valid chunks.
  shard_size_ = std::max<int64_t>(1, (total_ + world_size - 1) / world_size);
}

void FlatShardLayout::flatten_into(const std::vector<Tensor>& tensors, Tensor& flat) const {
  ANVIL_CHECK(tensors.size() == shapes_.size() && flat.numel() == padded_numel(),
              "FlatShardLayout::flatten_into: expected ", shapes_.size(), " tensors into ", padded_numel(),
              " elements, got ", tensors.size(), " into ", flat.numel());
  NoGradGuard no_grad;
  std::vector<Tensor> dst = views_of(flat);
  for (size_t i = 0; i < dst.size(); ++i) {
    if (tensors[i].defined()) {
      dst[i].copy_(tensors[i].detach());
    } else {
      dst[i].zero_();
    }
  }
  // Padding stays zero: its parameters, gradients and moments stay zero too.
  if (total_ < flat.numel()) flat.narrow(0, total_, flat.numel() - total_).zero_();
}

std::vector<Tensor> FlatShardLayout::views_of(const Tensor& flat) const {
  std::vector<Tensor> out;
  out.reserve(shapes_.size());
  for (size_t i = 0; i < shapes_.size(); ++i) out.push_back(view_of(flat, i));
  return out;
}

Tensor FlatShardLayout::view_of(const Tensor& flat, size_t i) const {
  int64_t numel = 1;
  for (int64_t d : shapes_[i]) numel *= d;
  return flat.narrow(0, offsets_[i], numel).view(shapes_[i]);
}

}  // namespace anvil::distributed
