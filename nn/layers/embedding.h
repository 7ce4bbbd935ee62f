#pragma once
/// @file
/// Embedding: a lookup table of num_embeddings rows of size embedding_dim.
/// forward takes int64 indices of any shape and returns [..., embedding_dim].
#include <cstdint>
#include <optional>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// The constructor's arguments as libtorch's options: EmbeddingOptions(1000, 64).
struct EmbeddingOptions {
  ANVIL_OPTION(EmbeddingOptions, int64_t, num_embeddings) = 0;  ///< rows in the table (the vocabulary size)
  ANVIL_OPTION(EmbeddingOptions, int64_t, embedding_dim) = 0;  ///< size of each row
  /// This row starts at zero and gets no gradient (a padding token's vector),
  /// as PyTorch's; negative counts from the end.
  ANVIL_OPTION(EmbeddingOptions, std::optional<int64_t>, padding_idx) = std::nullopt;
};

/// A lookup table of learned rows, as torch.nn.Embedding.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);  ///< weight ~ N(0, 1), as PyTorch
  explicit Embedding(const EmbeddingOptions& o);  ///< As `o` says.

  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Rows from N(0, 1), the padding row zeroed.

  ///@{
  /// the table's rows and row size
  int64_t num_embeddings, embedding_dim;
  ///@}
  std::optional<int64_t> padding_idx;  ///< normalised to [0, num_embeddings)
  Tensor weight;  ///< [num_embeddings, embedding_dim]
};

}  // namespace anvil::nn
