#pragma once
// NcclProcessGroup: collectives on CUDA tensors of one device per rank
// (CUDA builds with NCCL only; make_process_group picks it for CUDA tensors).
//
// Streams: NCCL runs on a communication stream of its own (one per group,
// from the backend's stream pool). Each call first makes that stream wait
// for the caller's current compute stream (an event), so the kernels that
// produced the tensors finish first; Work::wait() makes the caller's current
// stream wait for the collective (an event again) without blocking the host,
// as in PyTorch. The tensors' memory is recorded on the communication
// stream (Allocator::record_stream), so freeing a tensor while NCCL still
// reads it cannot hand its block to someone else.
//
// Failures: the communicator is created non-blocking so a rank that never
// arrives times out; a watchdog thread watches every collective in flight
// and, past the timeout (or on an NCCL async error, e.g. a dead peer), calls
// ncclCommAbort. From then on every call and every wait() throws the error.
// barrier() blocks the host until the barrier completed (or timed out).
//
// Unlike Gloo there is no header exchange before collectives: mismatched
// sizes across ranks hang inside NCCL until the watchdog's timeout.
#include <memory>

#include "distributed/process_group/process_group.h"
#include "distributed/store/store.h"

namespace anvil::distributed {

class NcclProcessGroup : public ProcessGroup {
 public:
  // Rank 0 makes the NCCL unique id and shares it through `store` under
  // `store_prefix`; every rank then joins the communicator on `device_index`.
  NcclProcessGroup(std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options,
                   const std::string& store_prefix, int device_index);
  ~NcclProcessGroup() override;

  std::string backend_name() const override { return "nccl"; }
  int device_index() const;

  WorkHandle all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle broadcast(Tensor& tensor, int root) override;
  WorkHandle all_gather(Tensor& output, const Tensor& input) override;
  WorkHandle reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) override;
  // NCCL has no tags: sends and recvs between two ranks match in call order.
  // Each holds the communication stream until its peer arrives: a rank that
  // must both send and receive uses batch_isend_irecv.
  WorkHandle send(const Tensor& tensor, int dst, int tag = 0) override;
  WorkHandle recv(Tensor& tensor, int src, int tag = 0) override;
  WorkHandle barrier() override;
  // Every op in one ncclGroupStart/End, so paired sends and recvs cannot
  // block each other (see ProcessGroup::batch_isend_irecv); one Work, shared
  // by all the ops, completes when the whole group has.
  std::vector<WorkHandle> batch_isend_irecv(const std::vector<P2POp>& ops) override;
  // Grouped ncclSend/ncclRecv to and from every peer (NCCL has no
  // all-to-all of its own); copies this rank's own block on the stream.
  WorkHandle all_to_all_single(Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes = {},
                               const std::vector<int64_t>& input_split_sizes = {}) override;

  struct State;  // nccl_process_group.cpp

 private:
  std::shared_ptr<State> state_;
};

}  // namespace anvil::distributed
