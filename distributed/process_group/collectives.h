#pragma once
/// @file
/// torch.distributed-style free functions on the default group (or another
/// one). Synchronous by default: they return when the operation finished on
/// this rank, and throw its error. With {.async_op = true} they return at
/// once; wait() on the returned Work before touching the tensors.
///
///     all_reduce(grad, ReduceOp::Avg);
///     auto w = all_reduce(grad, ReduceOp::Sum, {.async_op = true});
///     ... overlap other work ...
///     w->wait();
///
/// Tensors are handles: the collective writes into the tensor's memory, so
/// they are taken by const reference (like torch, which mutates in place).
#include <vector>

#include "distributed/process_group/init.h"
#include "distributed/process_group/process_group.h"

namespace anvil::distributed {

/// How a torch.distributed-style call runs: asynchronously or not, and on which group.
struct CallOptions {
  bool async_op = false;  ///< return at once with a Work to wait on (else the call waits)
  ProcessGroup* group = nullptr;  ///< nullptr: the default group
};

/// Reduces `tensor` in place over the group's ranks: every rank ends with the result.
WorkHandle all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum, const CallOptions& call = {});
/// Copies rank `root`'s `tensor` into every rank's.
WorkHandle broadcast(const Tensor& tensor, int root, const CallOptions& call = {});
/// output: world_size * input.numel() elements (rank 0's input first).
WorkHandle all_gather(const Tensor& output, const Tensor& input, const CallOptions& call = {});
/// input: world_size * output.numel() elements; rank r gets chunk r reduced.
WorkHandle reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                          const CallOptions& call = {});
/// Sends `tensor` to rank `dst`.
WorkHandle send(const Tensor& tensor, int dst, int tag = 0, const CallOptions& call = {});
/// Receives into `tensor` from rank `src`.
WorkHandle recv(const Tensor& tensor, int src, int tag = 0, const CallOptions& call = {});
WorkHandle barrier(const CallOptions& call = {});  ///< Returns once every rank of the group has called it.
/// Starts every send and recv of `ops` together (ProcessGroup::batch_isend_irecv:
/// the safe way to send and receive in one step on NCCL) and returns a Work
/// per op; synchronous unless call.async_op, as the functions above.
///
///     batch_isend_irecv({P2POp::isend(mine, next), P2POp::irecv(theirs, prev)});
std::vector<WorkHandle> batch_isend_irecv(const std::vector<P2POp>& ops, const CallOptions& call = {});
/// input's first dimension cut into blocks of input_split_sizes[i] rows, block
/// i to rank i; output gets rank j's block as its j-th (output_split_sizes[j]
/// rows). Empty split lists: equal blocks. ProcessGroup::all_to_all_single.
WorkHandle all_to_all_single(const Tensor& output, const Tensor& input,
                             const std::vector<int64_t>& output_split_sizes = {},
                             const std::vector<int64_t>& input_split_sizes = {}, const CallOptions& call = {});
/// inputs[i] to rank i; outputs[j] gets rank j's inputs[rank]. With async_op
/// the outputs are written by the Work's wait().
WorkHandle all_to_all(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                      const CallOptions& call = {});

}  // namespace anvil::distributed
