#pragma once
/// @file
/// einsum, as torch.einsum: "ij,jk->ik", implicit output ("ij,jk": the labels
/// that appear once, in alphabetical order, after any "..."), "..." for
/// broadcast leading dims, a label repeated in one operand takes its diagonal
/// ("ii->i", "ii->" is the trace), labels missing from the output are summed.
/// Size-1 dims broadcast against the same label's size elsewhere.
///
///     Tensor scores = anvil::einsum("bhqd,bhkd->bhqk", {q, k});
///
/// Operands are contracted left to right, each pair as one batched matmul over
/// permuted views (reshaped only where several labels merge into one matrix
/// dim), or a broadcast multiply when the pair shares no summed label.
/// Differentiable through those.
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace anvil {

/// The contraction `equation` names, over `operands` (see the file comment).
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

}  // namespace anvil
