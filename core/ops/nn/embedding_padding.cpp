// embedding with padding_idx: the lookup itself, then the rows read at
// padding_idx swapped for their detached copies, so no gradient reaches that
// row of the weight (a cost over the output, not over the whole table).
#include "core/dispatch.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/nn_functional.h"

namespace anvil {

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  ANVIL_CHECK(weight.defined() && weight.dim() == 2, "embedding: expected weight [num_embeddings, embedding_dim], got ",
              weight.defined() ? detail::describe(weight) : std::string("an undefined tensor"));
  const int64_t num = weight.size(0);
  ANVIL_CHECK(padding_idx >= -num && padding_idx < num, "embedding: padding_idx ", padding_idx,
              " is out of range for weight ", detail::describe(weight), " (expected -", num, " <= padding_idx < ", num,
              ")");
  if (padding_idx < 0) padding_idx += num;
  Tensor out = embedding(weight, indices);
  if (!out.requires_grad()) return out;
  return where(eq(indices, padding_idx).unsqueeze(-1), out.detach(), out);
}

}  // namespace anvil
