// The emulated NCCL's C API (include/nccl.h): argument checks at the call,
// as NCCL's are; group collection; the calls queued on the emulated streams
// (operations.cpp runs them there).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/emulator/device_memory.h"
#include "kernels/cuda/emulator/nccl/communicator.h"
#include "kernels/cuda/emulator/nccl/operations.h"
#include "kernels/cuda/emulator/nccl/reduce.h"
#include "kernels/cuda/emulator/streams.h"

using namespace anvil::emulator;
using namespace anvil::emulator::nccl;

namespace {

constexpr char kIdMagic[] = "anvil-emulated-nccl";

struct GroupedCall {
  Op op;
  StreamImpl* stream;
};
thread_local int t_group_depth = 0;
thread_local std::vector<GroupedCall> t_group;
thread_local std::string t_last_error;  // what ncclGetLastError returned last on this thread

ncclResult_t refuse(ncclResult_t code, const std::string& message) {
  set_last_error("anvil emulated NCCL: " + message);
  return code;
}

// Queues `ops` as one stream operation; the communicators count it in flight.
void enqueue_ops(StreamImpl* s, std::vector<Op> ops, bool grouped) {
  for (const Op& op : ops) {
    std::lock_guard<std::mutex> lock(op.comm->mutex);
    ++op.comm->in_flight;
  }
  enqueue(s, [ops = std::move(ops), grouped] {
    run_ops(ops, grouped);
    for (const Op& op : ops) {
      std::lock_guard<std::mutex> lock(op.comm->mutex);
      --op.comm->in_flight;
      op.comm->changed.notify_all();
    }
  });
}

bool on_device(const void* p, size_t bytes, int device) { return bytes == 0 || device_of(p) == device; }

ncclResult_t submit(Op op, ncclComm_t comm, cudaStream_t stream) {
  const std::string name = op_name(op.kind);
  if (!comm || !comm->impl) return refuse(ncclInvalidArgument, name + ": null communicator");
  op.comm = comm->impl;
  CommImpl& c = *op.comm;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.state == ncclInProgress)
      return refuse(ncclInvalidUsage, name +
                                          ": the communicator is still connecting (non-blocking init): poll "
                                          "ncclCommGetAsyncError until it returns ncclSuccess");
    if (c.state != ncclSuccess) {
      set_last_error(c.error);
      return c.state;
    }
  }
  const std::string where = c.who() + ": " + name;
  const size_t es = type_size(op.type);
  if (es == 0) return refuse(ncclInvalidArgument, where + ": invalid data type " + std::to_string(op.type));
  if (op.red < 0 || op.red >= ncclNumOps)
    return refuse(ncclInvalidArgument, where + ": invalid reduction " + std::to_string(op.red));
  const bool p2p = op.kind == OpKind::Send || op.kind == OpKind::Recv;
  if (p2p && (op.peer < 0 || op.peer >= c.nranks || op.peer == c.rank))
    return refuse(ncclInvalidArgument, where + ": peer " + std::to_string(op.peer) + " is not another rank in [0, " +
                                           std::to_string(c.nranks) + ")");
  if (op.kind == OpKind::Broadcast && (op.root < 0 || op.root >= c.nranks))
    return refuse(ncclInvalidArgument, where + ": root " + std::to_string(op.root) + " is not a rank");
  size_t in = op.count * es, out = op.count * es;
  if (op.kind == OpKind::AllGather) out *= static_cast<size_t>(c.nranks);
  if (op.kind == OpKind::ReduceScatter) in *= static_cast<size_t>(c.nranks);
  if (op.kind == OpKind::Recv || (op.kind == OpKind::Broadcast && op.root != c.rank)) in = 0;
  if (op.kind == OpKind::Send) out = 0;
  if (!on_device(op.sendbuff, in, c.device) || !on_device(op.recvbuff, out, c.device))
    return refuse(ncclInvalidArgument, where + ": a buffer is not device memory of cuda:" + std::to_string(c.device) +
                                           " (the communicator's device)");
  StreamImpl* s = resolve(stream, c.device);
  if (s->device != c.device)
    return refuse(ncclInvalidArgument, where + ": the stream belongs to cuda:" + std::to_string(s->device) +
                                           ", the communicator to cuda:" + std::to_string(c.device));
  if (t_group_depth > 0) {
    t_group.push_back({std::move(op), s});
    return ncclSuccess;
  }
  enqueue_ops(s, {std::move(op)}, false);
  return ncclSuccess;
}

uint64_t fresh_nonce() {
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  const auto t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return r ^ (t * 0x9e3779b97f4a7c15ULL) ^ (static_cast<uint64_t>(::getpid()) << 17);
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return refuse(ncclInvalidArgument, "ncclGetVersion: null pointer");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return refuse(ncclInvalidArgument, "ncclGetUniqueId: null pointer");
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  const uint64_t nonce = fresh_nonce();
  std::memcpy(id->internal + 32, &nonce, sizeof nonce);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (!comm) return refuse(ncclInvalidArgument, "ncclCommInitRank: null communicator pointer");
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return refuse(ncclInvalidArgument,
                  "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " ranks");
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0)
    return refuse(ncclInvalidArgument, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
  auto impl = std::make_shared<CommImpl>();
  impl->rank = rank;
  impl->nranks = nranks;
  cudaGetDevice(&impl->device);
  std::memcpy(&impl->nonce, id.internal + 32, sizeof impl->nonce);
  impl->blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  impl->state = ncclInProgress;
  const auto deadline = Clock::now() + op_timeout();
  if (!impl->blocking) {
    impl->connector = std::thread([c = impl.get(), deadline] { c->connect_all(deadline); });
    *comm = new ncclComm{impl};
    return ncclInProgress;
  }
  impl->connect_all(deadline);
  if (impl->state != ncclSuccess) {
    const ncclResult_t r = impl->state;
    impl->close_all();
    return r;
  }
  *comm = new ncclComm{impl};
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  CommImpl& c = *comm->impl;
  {
    // Calls still queued finish first (bounded: each has the watchdog's deadline).
    std::unique_lock<std::mutex> lock(c.mutex);
    c.changed.wait_for(lock, op_timeout() * 2, [&] { return c.in_flight == 0; });
    c.end_locked(c.who() + ": the communicator was destroyed (ncclCommDestroy)");
  }
  c.close_all();
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  CommImpl& c = *comm->impl;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.end_locked(c.who() + ": the communicator was aborted (ncclCommAbort)");
  }
  c.close_all();  // wakes every waiter; queued calls then return at once
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (!comm || !async_error) return refuse(ncclInvalidArgument, "ncclCommGetAsyncError: null argument");
  std::lock_guard<std::mutex> lock(comm->impl->mutex);
  *async_error = comm->impl->state;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return refuse(ncclInvalidArgument, "ncclCommCount: null argument");
  *count = comm->impl->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return refuse(ncclInvalidArgument, "ncclCommCuDevice: null argument");
  *device = comm->impl->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return refuse(ncclInvalidArgument, "ncclCommUserRank: null argument");
  *rank = comm->impl->rank;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (a buffer was not usable device memory)";
    case ncclSystemError:
      return "unhandled system error (a peer never arrived, or a deadlock)";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  std::string message;
  if (comm && comm->impl) {
    std::lock_guard<std::mutex> lock(comm->impl->mutex);
    message = comm->impl->error;
  }
  t_last_error = message.empty() ? last_error() : message;
  return t_last_error.c_str();
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = OpKind::AllReduce,
                 .sendbuff = sendbuff,
                 .recvbuff = recvbuff,
                 .count = count,
                 .type = datatype,
                 .red = op},
                comm, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = OpKind::Broadcast,
                 .sendbuff = sendbuff,
                 .recvbuff = recvbuff,
                 .count = count,
                 .type = datatype,
                 .root = root},
                comm, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(
      {.kind = OpKind::AllGather, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = sendcount, .type = datatype},
      comm, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = OpKind::ReduceScatter,
                 .sendbuff = sendbuff,
                 .recvbuff = recvbuff,
                 .count = recvcount,
                 .type = datatype,
                 .red = op},
                comm, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit({.kind = OpKind::Send, .sendbuff = sendbuff, .count = count, .type = datatype, .peer = peer}, comm,
                stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit({.kind = OpKind::Recv, .recvbuff = recvbuff, .count = count, .type = datatype, .peer = peer}, comm,
                stream);
}

ncclResult_t ncclGroupStart(void) {
  ++t_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (t_group_depth == 0) return refuse(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart");
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<GroupedCall> calls = std::move(t_group);
  t_group.clear();
  // One stream operation per stream, the calls in issue order.
  std::vector<std::pair<StreamImpl*, std::vector<Op>>> by_stream;
  for (GroupedCall& g : calls) {
    auto it = std::find_if(by_stream.begin(), by_stream.end(), [&](const auto& b) { return b.first == g.stream; });
    if (it == by_stream.end()) it = by_stream.insert(by_stream.end(), {g.stream, {}});
    it->second.push_back(std::move(g.op));
  }
  for (auto& [s, ops] : by_stream) enqueue_ops(s, std::move(ops), true);
  return ncclSuccess;
}

}  // extern "C"
