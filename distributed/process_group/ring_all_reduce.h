#pragma once
/// @file
/// Our own all-reduce: a ring of reduce-scatter then all-gather, built only on
/// the group's send/recv (the algorithm NCCL and Gloo use for large tensors).
///
/// The flat tensor is cut into size() segments (as equal as possible; some are
/// empty when numel < size()). In n-1 reduce-scatter steps each rank passes a
/// segment to its right neighbour and adds the one arriving from its left, so
/// rank r ends holding the full reduction of segment r+1; n-1 all-gather steps
/// then circulate the finished segments. Every rank sends and receives
/// 2(n-1)/n of the tensor, the minimum, so bus bandwidth approaches the link's.
///
/// Each segment is further split into chunks that travel independently: as
/// soon as chunk k of a step is received and reduced it is sent on for the
/// next step, so sending chunk k overlaps receiving and reducing chunk k+1.
///
/// Each step's recv and send go out as one batch_isend_irecv, which makes the
/// ring safe on NCCL (CUDA tensors) too: there a lone recv holds the stream
/// until its peer sends, and every rank receiving first would wait forever.
///
///     ring_all_reduce(group, grads, ReduceOp::Avg);
#include <cstdint>

#include "distributed/process_group/process_group.h"

namespace anvil::distributed {

/// ring_all_reduce's settings.
struct RingAllReduceOptions {
  /// Bytes per pipelined chunk; smaller chunks overlap more but pay more
  /// per-message overhead (on Gloo every message is a rendezvous plus a
  /// header, so many small chunks cost more than the overlap wins; the
  /// folder's README has the measurement behind the default).
  int64_t chunk_bytes = 1 << 20;
  /// Tags [tag_base, tag_base + 65536) are used (one per step and chunk; more
  /// chunks than that become larger chunks); pick a range no other send/recv
  /// between the same ranks uses at the same time.
  int tag_base = 1 << 20;
};

/// In place; the tensor must be contiguous and have the same dtype and numel
/// on every rank. Avg divides the sum by size() (integer division for integer
/// dtypes). With size() == 1 it returns at once.
void ring_all_reduce(ProcessGroup& group, Tensor& tensor, ReduceOp op = ReduceOp::Sum,
                     const RingAllReduceOptions& options = {});

/// The same, keeping its receive buffer (up to numel / size() elements)
/// between calls: a fresh multi-megabyte buffer costs page faults on every
/// call, which show at large sizes. What a training loop should hold.
class RingAllReducer {
 public:
  /// A reducer over `group`, its buffers kept between calls.
  explicit RingAllReducer(ProcessGroup& group, const RingAllReduceOptions& options = {});
  /// Reduces `tensor` in place over the group with the ring algorithm.
  void all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum);

 private:
  ProcessGroup& group_;
  RingAllReduceOptions options_;
  Tensor workspace_;
};

}  // namespace anvil::distributed
