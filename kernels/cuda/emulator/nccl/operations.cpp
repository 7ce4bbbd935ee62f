// How the emulated NCCL's calls run on a stream worker (operations.h).
#include "kernels/cuda/emulator/nccl/operations.h"

#include <cstring>

#include "kernels/cuda/emulator/device_memory.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/nccl/reduce.h"
#include "kernels/cuda/emulator/streams.h"

namespace anvil::emulator::nccl {
namespace {

struct Transfer {
  int peer;
  size_t offset, bytes;  // a slice of the input
};

// One call's progress through the phases of run_ops.
struct Progress {
  const Op* op = nullptr;
  size_t es = 0;
  const void* in_ptr = nullptr;
  size_t in_bytes = 0, out_bytes = 0, recv_bytes = 0;
  std::vector<uint8_t> input;  // this rank's input, read when the stream reaches the call
  std::vector<Transfer> sends;
  std::vector<int> recv_from;
  std::vector<std::vector<uint8_t>> from;  // by rank: what it sent us
};

// Device memory that a call reads or writes must be live when the stream
// reaches it, as a copy's must (memcheck); otherwise the call fails.
bool usable(CommImpl& c, const void* p, size_t n, const std::string& what) {
  if (n == 0) return true;
  std::string detail;
  const char* why = unusable_range(p, n, &detail);
  if (!why) return true;
  const std::string text =
      c.who() + ": " + what + " of " + std::to_string(n) + " bytes touches " + why + " (" + detail + ")";
  if (enabled(Checker::Memcheck)) {
    record(Checker::Memcheck, kUnusableCopy, nullptr, nullptr, text);
    flush_launch();
  }
  set_pending_error(c.device, cudaErrorInvalidValue);
  c.fail(ncclUnhandledCudaError, text);
  return false;
}

const char* type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclBfloat16:
      return "bfloat16";
    default:
      return "?";
  }
}

std::string describe(const Progress& p) {
  const Op& op = *p.op;
  std::string s = std::string(op_name(op.kind)) + " of " + std::to_string(op.count) + " " + type_name(op.type);
  if (op.kind == OpKind::Send) s += " to rank " + std::to_string(op.peer);
  if (op.kind == OpKind::Recv) s += " from rank " + std::to_string(op.peer);
  if (op.kind == OpKind::Broadcast) s += " from root " + std::to_string(op.root);
  return s;
}

Progress plan(const Op& op) {
  Progress p;
  p.op = &op;
  p.es = type_size(op.type);
  const int me = op.comm->rank, n = op.comm->nranks;
  const size_t bytes = op.count * p.es;
  p.from.resize(static_cast<size_t>(n));
  auto to_all = [&](size_t offset, size_t b, bool chunked) {
    for (int r = 0; r < n; ++r)
      if (r != me) p.sends.push_back({r, chunked ? static_cast<size_t>(r) * b : offset, b});
  };
  auto from_all = [&] {
    for (int r = 0; r < n; ++r)
      if (r != me) p.recv_from.push_back(r);
  };
  p.in_ptr = op.sendbuff;
  switch (op.kind) {
    case OpKind::Send:
      p.in_bytes = bytes;
      p.sends.push_back({op.peer, 0, bytes});
      break;
    case OpKind::Recv:
      p.recv_bytes = p.out_bytes = bytes;
      p.recv_from.push_back(op.peer);
      break;
    case OpKind::AllReduce:
      p.in_bytes = p.recv_bytes = p.out_bytes = bytes;
      to_all(0, bytes, false);
      from_all();
      break;
    case OpKind::Broadcast:
      p.out_bytes = p.recv_bytes = bytes;
      if (me == op.root) {
        p.in_bytes = bytes;
        to_all(0, bytes, false);
      } else {
        p.recv_from.push_back(op.root);
      }
      break;
    case OpKind::AllGather:
      p.in_bytes = p.recv_bytes = bytes;
      p.out_bytes = bytes * static_cast<size_t>(n);
      to_all(0, bytes, false);
      from_all();
      break;
    case OpKind::ReduceScatter:
      p.in_bytes = bytes * static_cast<size_t>(n);
      p.recv_bytes = p.out_bytes = bytes;
      to_all(0, bytes, true);
      from_all();
      break;
  }
  return p;
}

// The rank order reduction of every rank's `chunk` (this rank's from its input).
std::vector<uint8_t> reduce_ranks(const Progress& p, size_t chunk_offset) {
  const Op& op = *p.op;
  const int me = op.comm->rank, n = op.comm->nranks;
  auto part = [&](int r) { return r == me ? p.input.data() + chunk_offset : p.from[static_cast<size_t>(r)].data(); };
  std::vector<uint8_t> acc(part(0), part(0) + p.out_bytes);
  for (int r = 1; r < n; ++r) reduce_into(op.type, op.red, acc.data(), part(r), op.count);
  if (op.red == ncclAvg) divide_by(op.type, acc.data(), op.count, n);
  return acc;
}

std::vector<uint8_t> result_of(const Progress& p) {
  const Op& op = *p.op;
  const int me = op.comm->rank, n = op.comm->nranks;
  switch (op.kind) {
    case OpKind::Send:
      return {};
    case OpKind::Recv:
      return p.from[static_cast<size_t>(op.peer)];
    case OpKind::AllReduce:
      return reduce_ranks(p, 0);
    case OpKind::Broadcast:
      return me == op.root ? p.input : p.from[static_cast<size_t>(op.root)];
    case OpKind::AllGather: {
      std::vector<uint8_t> out;
      out.reserve(p.out_bytes);
      for (int r = 0; r < n; ++r) {
        const auto& part = r == me ? p.input : p.from[static_cast<size_t>(r)];
        out.insert(out.end(), part.begin(), part.end());
      }
      return out;
    }
    case OpKind::ReduceScatter:
      return reduce_ranks(p, static_cast<size_t>(me) * p.out_bytes);
  }
  return {};
}

const char* deadlock_hint =
    "this looks like a deadlock of ungrouped send/recv: an ungrouped ncclSend or ncclRecv holds its stream until "
    "the peer's matching call runs, so ranks that both send (or both receive) first wait for each other forever; "
    "issue paired sends and recvs in one ncclGroupStart/ncclGroupEnd (anvil: batch_isend_irecv)";
const char* missing_hint =
    "it never reached its matching call: it may be stuck in an ungrouped send/recv or another collective, have "
    "called collectives in a different order or with other sizes, or have died";

}  // namespace

void run_ops(const std::vector<Op>& ops, bool grouped) {
  for (const Op& op : ops) {
    std::lock_guard<std::mutex> lock(op.comm->mutex);
    if (op.comm->state != ncclSuccess) return;  // a failed communicator runs nothing more
  }
  const auto deadline = Clock::now() + op_timeout();
  std::vector<Progress> work;
  work.reserve(ops.size());
  for (const Op& op : ops) work.push_back(plan(op));
  auto hint = [&](const Progress& p) {
    const bool p2p = p.op->kind == OpKind::Send || p.op->kind == OpKind::Recv;
    return std::string(p2p && !grouped ? deadlock_hint : missing_hint);
  };

  // Read every input and check every output before anything is exchanged.
  for (Progress& p : work) {
    CommImpl& c = *p.op->comm;
    if (!usable(c, p.in_ptr, p.in_bytes, describe(p) + " (send buffer)")) return;
    if (!usable(c, p.op->recvbuff, p.out_bytes, describe(p) + " (receive buffer)")) return;
    p.input.resize(p.in_bytes);
    if (p.in_bytes) std::memcpy(p.input.data(), p.in_ptr, p.in_bytes);
  }
  for (Progress& p : work)
    for (int peer : p.recv_from)
      if (!p.op->comm->send_cts(peer)) return;
  for (Progress& p : work)
    for (const Transfer& t : p.sends) {
      CommImpl& c = *p.op->comm;
      if (!c.wait_cts(t.peer, deadline, describe(p), hint(p))) return;
      if (!c.send_data(t.peer, p.op->kind, p.input.data() + t.offset, t.bytes)) return;
    }
  for (Progress& p : work)
    for (int peer : p.recv_from) {
      CommImpl& c = *p.op->comm;
      DataFrame f;
      if (!c.wait_data(peer, deadline, describe(p), hint(p), &f)) return;
      const OpKind want = p.op->kind == OpKind::Recv ? OpKind::Send : p.op->kind;
      if (f.kind != want || f.bytes.size() != p.recv_bytes) {
        c.fail(ncclInvalidUsage, c.who() + ": " + describe(p) + " expected " + std::to_string(p.recv_bytes) +
                                     " bytes of rank " + std::to_string(peer) + "'s " + op_name(want) + " but got " +
                                     std::to_string(f.bytes.size()) + " bytes of its " + op_name(f.kind) +
                                     " (the ranks issued different calls, counts or types)");
        return;
      }
      p.from[static_cast<size_t>(peer)] = std::move(f.bytes);
    }
  for (Progress& p : work) {
    if (!p.out_bytes) continue;
    const std::vector<uint8_t> out = result_of(p);
    // Checked again: another stream may have freed it while this call waited.
    if (!usable(*p.op->comm, p.op->recvbuff, out.size(), describe(p) + " (receive buffer)")) return;
    std::memcpy(p.op->recvbuff, out.data(), out.size());
    set_state(p.op->recvbuff, out.size(), kInitialized);
  }
}

}  // namespace anvil::emulator::nccl
