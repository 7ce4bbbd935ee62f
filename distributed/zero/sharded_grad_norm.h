#pragma once
// Gradient clipping by the global norm when every rank holds a disjoint
// slice of the gradients (ZeRO-2, FSDP): the squared norms of the slices are
// all-reduced, so every rank gets the norm of the whole gradient and scales
// its slice by the same factor, as torch.nn.utils.clip_grad_norm_ would on
// the unsharded gradients.
#include <vector>

#include "core/tensor.h"
#include "distributed/process_group/process_group.h"

namespace anvil::distributed {

// `shards`: the tensors whose .grad() are this rank's slices (padding must be
// zero). Collective. Returns the global 2-norm; a non-finite one is returned
// and nothing is scaled. `what` names the caller in errors.
double clip_sharded_grad_norm_(ProcessGroup& group, const std::vector<Tensor>& shards, double max_norm,
                               const char* what);

}  // namespace anvil::distributed
