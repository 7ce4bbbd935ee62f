#include "nn/layers/embedding.h"

#include "core/factory.h"
#include "core/ops/indexing.h"
#include "nn/init.h"

namespace anvil::nn {

Embedding::Embedding(int64_t num, int64_t dim) : Module("Embedding"), num_embeddings(num), embedding_dim(dim) {
  ANVIL_CHECK(num > 0 && dim > 0, "Embedding: expected positive num_embeddings and embedding_dim, got ", num, " and ",
              dim);
  weight = register_parameter("weight", empty({num, dim}));
  reset_parameters();
}

void Embedding::reset_parameters() { init::normal_(weight); }

// The indices' dtype and range are checked by the op.
Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices); }

std::string Embedding::extra_repr() const {
  return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
}

}  // namespace anvil::nn
