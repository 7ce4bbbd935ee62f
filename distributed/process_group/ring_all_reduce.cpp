#include "distributed/process_group/ring_all_reduce.h"

#include <algorithm>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/describe.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"

namespace anvil::distributed {
namespace {

// [begin, end) of part `i` when `n` elements are cut into `parts` pieces whose
// sizes differ by at most one.
struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Range balanced_part(int64_t n, int64_t parts, int64_t i) { return {n * i / parts, n * (i + 1) / parts}; }

constexpr int64_t kMaxMessages = 1 << 16;

// local = local (op) arrived, with anvil's own ops on the tensors' device
// (queued on its current stream, after the receive the caller waited for).
// Sum and Avg add in place; Max and Min go through a chunk-sized temporary.
void combine_into(Tensor& local, const Tensor& arrived, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:  // summed here, divided once at the end
      add_(local, arrived);
      return;
    case ReduceOp::Max:
      local.copy_(maximum(local, arrived));
      return;
    case ReduceOp::Min:
      local.copy_(minimum(local, arrived));
      return;
  }
  fail("ring_all_reduce: unknown ReduceOp");
}

// The schedule of one ring all-reduce, for one rank: 2(n-1) steps, the first
// n-1 reduce-scatter (received chunks are combined into the local segment),
// the rest all-gather (received chunks land in place).
class RingSchedule {
 public:
  RingSchedule(ProcessGroup& group, const Tensor& flat, ReduceOp op, const RingAllReduceOptions& o, Tensor& workspace)
      : group_(group),
        flat_(flat),
        n_(group.size()),
        rank_(group.rank()),
        steps_(2 * (n_ - 1)),
        op_(op),
        tag_base_(o.tag_base) {
    const int64_t numel = flat.numel();
    const int64_t max_segment = (numel + n_ - 1) / n_;
    const int64_t chunk_elems = std::max<int64_t>(1, o.chunk_bytes / static_cast<int64_t>(flat.itemsize()));
    chunks_ = std::max<int64_t>(1, (max_segment + chunk_elems - 1) / chunk_elems);
    // Each (step, chunk) has its own tag; beyond kMaxMessages per call larger
    // chunks are used instead (that many messages already pipeline fully).
    chunks_ = std::min(chunks_, std::max<int64_t>(1, kMaxMessages / steps_));
    max_chunk_ = (max_segment + chunks_ - 1) / chunks_;
    // One receive region per chunk index: the region of chunk k is free again
    // once chunk k of the previous step was combined, which is exactly when
    // the next step's receive of chunk k is posted.
    const int64_t need = std::max<int64_t>(1, chunks_ * max_chunk_);
    if (!workspace.defined() || workspace.numel() < need || workspace.dtype() != flat.dtype() ||
        workspace.device() != flat.device())
      workspace = empty({need}, flat.options());
    scratch_ = workspace;
    sends_.assign(static_cast<size_t>(steps_ * chunks_), nullptr);
    recvs_.assign(static_cast<size_t>(steps_ * chunks_), nullptr);
  }

  void run() {
    for (int64_t k = 0; k < chunks_; ++k) post(0, k);
    for (int64_t t = 0; t < steps_; ++t) {
      for (int64_t k = 0; k < chunks_; ++k) {
        if (WorkHandle& w = recv_work(t, k)) w->wait();
        if (is_reduce_step(t)) combine(t, k);
        if (t + 1 < steps_) post(t + 1, k);
      }
    }
    for (auto& w : sends_)
      if (w) w->wait();
  }

 private:
  bool is_reduce_step(int64_t t) const { return t < n_ - 1; }
  int64_t mod(int64_t x) const { return ((x % n_) + n_) % n_; }
  // Reduce-scatter step s sends segment r-s and receives r-s-1; all-gather
  // step s sends r+1-s and receives r-s. Either way the segment received at
  // step t is the one sent at step t+1.
  int64_t send_segment(int64_t t) const { return is_reduce_step(t) ? mod(rank_ - t) : mod(rank_ + 1 - (t - (n_ - 1))); }
  int64_t recv_segment(int64_t t) const { return is_reduce_step(t) ? mod(rank_ - t - 1) : mod(rank_ - (t - (n_ - 1))); }
  // Where chunk k of a segment lies in the flat tensor.
  Range chunk_range(int64_t segment, int64_t k) const {
    Range seg = balanced_part(flat_.numel(), n_, segment);
    Range c = balanced_part(seg.size(), chunks_, k);
    return {seg.begin + c.begin, seg.begin + c.end};
  }
  Tensor slice(const Range& r) const { return flat_.narrow(0, r.begin, r.size()); }
  Tensor scratch(int64_t k, int64_t len) const { return scratch_.narrow(0, k * max_chunk_, len); }
  int tag(int64_t t, int64_t k) const { return tag_base_ + static_cast<int>(t * chunks_ + k); }
  WorkHandle& send_work(int64_t t, int64_t k) { return sends_[static_cast<size_t>(t * chunks_ + k)]; }
  WorkHandle& recv_work(int64_t t, int64_t k) { return recvs_[static_cast<size_t>(t * chunks_ + k)]; }

  // Posts step t's receive and send of chunk k as one batch (empty chunks
  // are skipped on both ends alike, since every rank computes the same
  // ranges). One batch, because on NCCL a lone recv from the previous rank
  // would hold the stream while that rank, doing the same, never sends.
  void post(int64_t t, int64_t k) {
    const int next = static_cast<int>(mod(rank_ + 1)), prev = static_cast<int>(mod(rank_ - 1));
    std::vector<P2POp> ops;
    Range in = chunk_range(recv_segment(t), k);
    if (in.size() > 0) {
      if (is_reduce_step(t)) {
        ops.push_back(P2POp::irecv(scratch(k, in.size()), prev, tag(t, k)));
      } else {
        // All-gather overwrites segment r-s, which reduce-scatter step s sent:
        // that send must have left the buffer first.
        const int64_t s = t - (n_ - 1);
        if (WorkHandle& w = send_work(s, k)) w->wait();
        ops.push_back(P2POp::irecv(slice(in), prev, tag(t, k)));
      }
    }
    Range out = chunk_range(send_segment(t), k);
    if (out.size() > 0) ops.push_back(P2POp::isend(slice(out), next, tag(t, k)));
    std::vector<WorkHandle> works = group_.batch_isend_irecv(ops);
    for (size_t i = 0; i < ops.size(); ++i)
      (ops[i].kind == P2POp::Kind::Recv ? recv_work(t, k) : send_work(t, k)) = works[i];
  }

  void combine(int64_t t, int64_t k) {
    Range in = chunk_range(recv_segment(t), k);
    if (in.size() == 0) return;
    Tensor local = slice(in);
    combine_into(local, scratch(k, in.size()), op_);
  }

  ProcessGroup& group_;
  Tensor flat_;
  const int64_t n_, rank_, steps_;
  const ReduceOp op_;
  const int tag_base_;
  int64_t chunks_ = 1, max_chunk_ = 1;
  Tensor scratch_;
  std::vector<WorkHandle> sends_, recvs_;
};

}  // namespace

void ring_all_reduce(ProcessGroup& group, Tensor& tensor, ReduceOp op, const RingAllReduceOptions& options) {
  RingAllReducer(group, options).all_reduce(tensor, op);
}

RingAllReducer::RingAllReducer(ProcessGroup& group, const RingAllReduceOptions& options)
    : group_(group), options_(options) {}

void RingAllReducer::all_reduce(Tensor& tensor, ReduceOp op) {
  ProcessGroup& group = group_;
  const RingAllReduceOptions& options = options_;
  ANVIL_CHECK(tensor.defined(), "ring_all_reduce: got an undefined tensor");
  ANVIL_CHECK(tensor.is_contiguous(), "ring_all_reduce: the tensor must be contiguous, got a strided view ",
              detail::describe(tensor), " (reduce tensor.contiguous() and copy it back)");
  ANVIL_CHECK(options.chunk_bytes > 0, "ring_all_reduce: chunk_bytes must be positive, got ", options.chunk_bytes);
  if (group.size() == 1 || tensor.numel() == 0) return;
  NoGradGuard no_grad;
  Tensor flat = tensor.detach().view({tensor.numel()});
  RingSchedule(group, flat, op, options, workspace_).run();
  if (op == ReduceOp::Avg) flat.div_(Scalar(static_cast<int64_t>(group.size())));
  tensor.bump_version();
}

}  // namespace anvil::distributed
