#pragma once
// The communication that tensor parallelism (Megatron-LM) puts between its
// layers, as differentiable functions: each is a collective in one direction
// and its adjoint in the other, so autograd moves the gradients by itself.
//
//   Megatron's f: copy_to_tensor_parallel_region       identity   / all-reduce
//   Megatron's g: reduce_from_tensor_parallel_region   all-reduce / identity
//   scatter_to_tensor_parallel_region                  keep my slice of the last dim / all-gather it
//   gather_from_tensor_parallel_region                 all-gather the last dim / keep my slice
//   sequence parallel (along `dim`, the sequence dimension):
//   scatter_to_sequence_parallel_region                keep my slice / all-gather
//   gather_from_sequence_parallel_region               all-gather / reduce-scatter
//   reduce_scatter_to_sequence_parallel_region         reduce-scatter / all-gather
//
//   Tensor x_tp = copy_to_tensor_parallel_region(x, tp_group);   // before a column-parallel layer
//   Tensor y = reduce_from_tensor_parallel_region(partial, tp_group);  // after a row-parallel one
//
// Every rank of the group calls the same functions in the same order, in
// forward and in backward (the collectives pair up by order). Slices are in
// group-rank order: rank r holds elements [r * n / size, (r + 1) * n / size)
// of the split dimension, which must divide by the group's size. With a
// group of one rank every function is the identity.
#include <cstdint>
#include <memory>

#include "core/tensor.h"
#include "distributed/process_group/process_group.h"

namespace anvil::distributed::tensor_parallel {

using GroupPtr = std::shared_ptr<ProcessGroup>;

Tensor copy_to_tensor_parallel_region(const Tensor& x, const GroupPtr& group);
Tensor reduce_from_tensor_parallel_region(const Tensor& x, const GroupPtr& group);
Tensor scatter_to_tensor_parallel_region(const Tensor& x, const GroupPtr& group);
Tensor gather_from_tensor_parallel_region(const Tensor& x, const GroupPtr& group);

Tensor scatter_to_sequence_parallel_region(const Tensor& x, int64_t dim, const GroupPtr& group);
Tensor gather_from_sequence_parallel_region(const Tensor& x, int64_t dim, const GroupPtr& group);
Tensor reduce_scatter_to_sequence_parallel_region(const Tensor& x, int64_t dim, const GroupPtr& group);

// The collectives themselves, without autograd (the functions above are
// built from them; layers with a backward of their own use them too).
Tensor all_reduce_sum(const Tensor& x, ProcessGroup& group);
Tensor all_gather_along(const Tensor& x, int64_t dim, ProcessGroup& group);
Tensor reduce_scatter_along(const Tensor& x, int64_t dim, ProcessGroup& group);
// This rank's slice of dim (a view); `what` names the caller in the error
// when the size does not divide by the group's.
Tensor my_slice_along(const Tensor& x, int64_t dim, ProcessGroup& group, const char* what);

}  // namespace anvil::distributed::tensor_parallel
