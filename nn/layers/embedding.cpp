#include "nn/layers/embedding.h"

#include "core/factory.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/indexing.h"
#include "core/ops/nn_functional.h"
#include "nn/init.h"

namespace anvil::nn {

Embedding::Embedding(int64_t num, int64_t dim) : Module("Embedding"), num_embeddings(num), embedding_dim(dim) {
  ANVIL_CHECK(num > 0 && dim > 0, "Embedding: expected positive num_embeddings and embedding_dim, got ", num, " and ",
              dim);
  weight = register_parameter("weight", empty({num, dim}));
  reset_parameters();
}

Embedding::Embedding(const EmbeddingOptions& o) : Embedding(o.num_embeddings, o.embedding_dim) {
  if (o.padding_idx.has_value()) {
    const int64_t p = *o.padding_idx;
    ANVIL_CHECK(p >= -num_embeddings && p < num_embeddings, "Embedding: padding_idx ", p,
                " is out of range for num_embeddings=", num_embeddings);
    padding_idx = p < 0 ? p + num_embeddings : p;
    reset_parameters();
  }
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (padding_idx.has_value()) {
    NoGradGuard no_grad;
    weight[*padding_idx].zero_();
  }
}

// The indices' dtype and range are checked by the op.
Tensor Embedding::forward(const Tensor& indices) {
  return padding_idx.has_value() ? embedding(weight, indices, *padding_idx) : embedding(weight, indices);
}

std::string Embedding::extra_repr() const {
  return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim) +
         (padding_idx.has_value() ? ", padding_idx=" + std::to_string(*padding_idx) : std::string());
}

}  // namespace anvil::nn
