#pragma once
/// @file
/// A ProcessGroup is a set of ranks that run collectives together. Every
/// operation returns a Work handle at once; wait() blocks until it finished
/// and throws anvil::Error if it failed or ran past the group's timeout
/// (a hung or dead peer becomes an error on every rank, not a hang).
///
/// Backends (chosen at run time by the tensors' device):
///
///     Gloo  (gloo/)  CPU tensors
///     NCCL  (nccl/)  CUDA tensors
///     make_process_group (process_group_factory.h) holds both and picks per call.
/// Tensors must be contiguous; every rank must pass the same dtype and size,
/// and a mismatch is reported as an error naming both.
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace anvil::distributed {

/// How a collective combines the ranks' values: sum, mean, max or min.
enum class ReduceOp { Sum, Avg, Max, Min };
const char* to_string(ReduceOp op);  ///< "sum", "avg", "max", "min".

/// An operation a ProcessGroup started: wait for it, or ask whether it finished.
class Work {
 public:
  virtual ~Work() = default;
  /// Blocks until the operation finished; rethrows its error.
  virtual void wait() = 0;
  /// Does not block. Point-to-point works (send/recv) complete in wait(), as
  /// in PyTorch's Gloo backend: they report false until waited on.
  virtual bool is_completed() = 0;
};
using WorkHandle = std::shared_ptr<Work>;  ///< A started operation, shared by whoever waits for it.

/// One send or receive of batch_isend_irecv (PyTorch's dist.P2POp).
struct P2POp {
  /// a send or a receive
  enum class Kind { Send, Recv };
  Kind kind = Kind::Send;  ///< Send or Recv
  Tensor tensor;  ///< read by a send, written by a recv
  int peer = 0;  ///< the destination of a send, the source of a recv
  int tag = 0;  ///< matches the peer's op with the same tag

  /// A send of `tensor` to rank `dst`.
  static P2POp isend(const Tensor& tensor, int dst, int tag = 0) { return {Kind::Send, tensor, dst, tag}; }
  /// A receive into `tensor` from rank `src`.
  static P2POp irecv(const Tensor& tensor, int src, int tag = 0) { return {Kind::Recv, tensor, src, tag}; }
};

/// A Work that already finished (successfully, or with `error` when non-null).
WorkHandle completed_work(std::exception_ptr error = nullptr);

/// How a process group behaves: its timeout, consistency checks and Gloo's network interface.
struct ProcessGroupOptions {
  /// Bounds every operation (and the rendezvous): a dead or silent peer turns
  /// into an anvil::Error on every surviving rank after at most this long.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// Before each collective the ranks exchange (op, dtype, numel, root/op) and
  /// fail together with an error naming the ranks that disagree. On by
  /// default: without it a size mismatch hangs until the timeout or silently
  /// reads the wrong bytes, and a dtype mismatch reduces garbage; the cost is
  /// one tiny extra message round per collective. Turn off for many tiny
  /// collectives once a program is known to be correct. Send/recv always
  /// carry a small header, so the receiver names a mismatch either way.
  bool check_consistency = true;
  /// The address this rank's Gloo transport listens on (a hostname or IP the
  /// peers can reach). Empty: 127.0.0.1 when MASTER_ADDR is a loopback
  /// address (one machine), else the address of this machine's interface
  /// that routes to MASTER_ADDR. ANVIL_GLOO_IFNAME (an interface name)
  /// overrides both.
  std::string gloo_hostname;
};

/// A set of ranks that run collectives together; every operation returns a Work at once (see the file comment).
class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}  ///< This process is rank `rank` of `size`.
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }  ///< This process's rank in the group.
  int size() const { return size_; }  ///< Number of ranks.
  virtual std::string backend_name() const = 0;  ///< "gloo", "nccl", ...

  /// In place on every rank.
  virtual WorkHandle all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
  /// root's tensor is copied into every other rank's.
  virtual WorkHandle broadcast(Tensor& tensor, int root) = 0;
  /// output holds size() * input.numel() elements: rank 0's input, then rank 1's, ...
  virtual WorkHandle all_gather(Tensor& output, const Tensor& input) = 0;
  /// input holds size() * output.numel() elements; rank r gets the reduction of
  /// every rank's r-th chunk.
  virtual WorkHandle reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) = 0;
  ///@{
  /// Point to point; a send matches the recv on the peer with the same tag.
  virtual WorkHandle send(const Tensor& tensor, int dst, int tag = 0) = 0;
  virtual WorkHandle recv(Tensor& tensor, int src, int tag = 0) = 0;
  ///@}
  virtual WorkHandle barrier() = 0;  ///< Returns once every rank has entered the barrier.
  /// PyTorch's batch_isend_irecv: starts every send and recv of `ops` at once
  /// and returns one Work per op, in order. Use it whenever a rank both sends
  /// and receives in one step (a ring, a pipeline stage passing activations
  /// one way and gradients the other): NCCL's send and recv each hold their
  /// stream until the peer arrives, so a recv issued alone before a send can
  /// wait forever on a peer that does the same; in one batch (one NCCL group)
  /// they progress together. Backends whose sends and recvs are independent
  /// anyway (Gloo) keep this default, which posts them one by one.
  virtual std::vector<WorkHandle> batch_isend_irecv(const std::vector<P2POp>& ops);

  /// PyTorch's all_to_all_single: the input's first dimension is cut into
  /// size() consecutive blocks of input_split_sizes[i] rows, and block i goes
  /// to rank i; the output receives rank j's block for this rank as its j-th
  /// block, output_split_sizes[j] rows. An empty list means equal blocks (the
  /// first dimension must then divide by size()). Output and input have the
  /// same dtype and the same number of elements per row; rank i's
  /// input_split_sizes[j] must equal rank j's output_split_sizes[i].
  /// The base class has none; Gloo and NCCL implement it.
  virtual WorkHandle all_to_all_single(Tensor& output, const Tensor& input,
                                       const std::vector<int64_t>& output_split_sizes = {},
                                       const std::vector<int64_t>& input_split_sizes = {});
  /// PyTorch's all_to_all: inputs[i] goes to rank i, and outputs[j] receives
  /// rank j's inputs[rank()]. One tensor per rank in each list, any shapes,
  /// one dtype and device; outputs[j] must have rank j's inputs[rank()]'s
  /// number of elements. Runs as one all_to_all_single over packed copies;
  /// the outputs are written in wait() (so is_completed() is false until
  /// then, as for send/recv).
  virtual WorkHandle all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs);

 private:
  int rank_;
  int size_;
};

/// Element counts and offsets of one all_to_all_single on one rank, checked
/// against the tensors (every backend plans with this, so the rules and
/// messages are the same everywhere). `what` prefixes the errors.
struct AllToAllPlan {
  ///@{
  /// elements of the input, per destination rank
  std::vector<int64_t> send_counts, send_offsets;
  ///@}
  ///@{
  /// elements of the output, per source rank
  std::vector<int64_t> recv_counts, recv_offsets;
  ///@}
};
/// Checks one all_to_all_single's tensors and split sizes against the group and returns its element counts and offsets.
AllToAllPlan plan_all_to_all(const std::string& what, const Tensor& output, const Tensor& input,
                             const std::vector<int64_t>& output_split_sizes,
                             const std::vector<int64_t>& input_split_sizes, int rank, int size);

}  // namespace anvil::distributed
