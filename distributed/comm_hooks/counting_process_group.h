#pragma once
/// @file
/// A ProcessGroup that forwards every call to another and adds up the bytes
/// of the tensors this rank hands to it: DDP passes one to the comm hooks, so
/// "bytes per step" counts what each hook really sends, compressed or not.
///
/// The count is the payload of each call (all_reduce: the tensor's bytes;
/// all_gather: the input's; send: the tensor's), not what the transport puts
/// on the wire: a ring all-reduce of B bytes moves 2 (n - 1) / n * B per
/// rank, for every hook alike, so the payload is what compares hooks.
#include <atomic>
#include <cstdint>
#include <memory>

#include "distributed/process_group/process_group.h"

namespace anvil::distributed {

/// A ProcessGroup that counts the bytes and collectives passing through to another (see the file comment).
class CountingProcessGroup : public ProcessGroup {
 public:
  /// Counts the calls made through it to `inner`.
  explicit CountingProcessGroup(ProcessGroup& inner) : ProcessGroup(inner.rank(), inner.size()), inner_(inner) {}

  int64_t bytes() const { return bytes_.load(); }  ///< Payload bytes so far.
  int64_t collectives() const { return calls_.load(); }  ///< Collectives so far.

  std::string backend_name() const override { return inner_.backend_name(); }
  WorkHandle all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle broadcast(Tensor& tensor, int root) override;
  WorkHandle all_gather(Tensor& output, const Tensor& input) override;
  WorkHandle reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle send(const Tensor& tensor, int dst, int tag = 0) override;
  WorkHandle recv(Tensor& tensor, int src, int tag = 0) override;
  WorkHandle barrier() override;
  WorkHandle all_to_all_single(Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes = {},
                               const std::vector<int64_t>& input_split_sizes = {}) override;
  WorkHandle all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) override;

 private:
  void count(const Tensor& t) {
    bytes_ += static_cast<int64_t>(t.nbytes());
    ++calls_;
  }

  ProcessGroup& inner_;
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> calls_{0};
};

}  // namespace anvil::distributed
