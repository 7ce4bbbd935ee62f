#pragma once
// Embedding: a lookup table of num_embeddings rows of size embedding_dim.
// forward takes int64 indices of any shape and returns [..., embedding_dim].
#include <cstdint>

#include "nn/module.h"

namespace anvil::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);  // weight ~ N(0, 1), as PyTorch

  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  void reset_parameters();

  int64_t num_embeddings, embedding_dim;
  Tensor weight;  // [num_embeddings, embedding_dim]
};

}  // namespace anvil::nn
