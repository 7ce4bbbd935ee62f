#pragma once
// Internal to the emulated NCCL: one call (a collective, a send, a recv) and
// how a group of calls runs when its stream reaches it.
#include <memory>
#include <vector>

#include "kernels/cuda/emulator/nccl/communicator.h"

namespace anvil::emulator::nccl {

struct Op {
  std::shared_ptr<CommImpl> comm;
  OpKind kind = OpKind::Send;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // elements: per rank for all_gather (send) and reduce_scatter (recv)
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t red = ncclSum;
  int root = 0, peer = 0;
};

// Runs `ops` as one unit, on a stream worker: first every receive's
// clear-to-send goes out, then every send waits for its peer's and writes,
// then every receive takes its data, then results are reduced and written.
// So the calls of one group never wait for each other; a group of one call
// holds its stream until its peers reach theirs, as NCCL does. `grouped`:
// the calls came from ncclGroupStart/End (only changes the watchdog's hint).
void run_ops(const std::vector<Op>& ops, bool grouped);

}  // namespace anvil::emulator::nccl
