#pragma once
// Internal to the emulated NCCL: a communicator and its transport.
//
// Rank r listens on an abstract unix socket named from the unique id's nonce
// and r; every pair of ranks shares one connection (the lower rank connects).
// A reader thread per peer drains that connection into two FIFOs: the
// peer's clear-to-sends and its data frames. Messages between a pair match in
// issue order, as NCCL's do (no tags).
//
// Rendezvous, so NCCL's blocking semantics hold: a receive, when its stream
// reaches it, sends a clear-to-send; a send waits for the peer's
// clear-to-send before it writes. Every wait ends at a deadline (the
// deadlock watchdog, ANVIL_EMU_NCCL_TIMEOUT), on ncclCommAbort, or when the
// peer's connection closes; each then fails the communicator with a message
// naming the rank, the operation and the peer.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/emulator/include/nccl.h"

namespace anvil::emulator::nccl {

using Clock = std::chrono::steady_clock;

// What a data frame carries, so a send meeting another kind of call is named.
enum class OpKind : uint32_t { Send = 1, Recv, AllReduce, Broadcast, AllGather, ReduceScatter };
const char* op_name(OpKind k);  // "ncclSend", ...

struct DataFrame {
  OpKind kind;
  std::vector<uint8_t> bytes;
};

struct Peer {
  int fd = -1;
  std::thread reader;
  std::mutex write_mutex;  // one frame at a time on the connection
  // Guarded by the communicator's mutex:
  uint64_t cts_received = 0, cts_used = 0;
  std::deque<DataFrame> data;
  bool closed = false;  // the connection ended (peer exited, destroyed or aborted)
};

struct CommImpl {
  int rank = 0, nranks = 1, device = 0;
  uint64_t nonce = 0;
  bool blocking = true;

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<Peer>> peers;  // by rank; null for this rank
  ncclResult_t state = ncclSuccess;  // ncclInProgress while connecting, then the first error
  std::string error;  // what failed, for ncclGetLastError
  bool aborted = false;
  int in_flight = 0;  // calls queued on streams and not yet done (ncclCommDestroy waits for them)
  std::thread connector;  // non-blocking init

  std::string who() const;  // "rank 1 of 2 (cuda:1)"

  // Connects to every peer (blocking); on failure sets the error.
  void connect_all(Clock::time_point deadline);
  // Fails the communicator (first error wins) and wakes every waiter.
  void fail(ncclResult_t code, const std::string& message);
  void fail_locked(ncclResult_t code, const std::string& message);
  // Destroy and abort: later calls fail with `message`, which is not an error
  // to report (ncclGetLastError(nullptr) keeps the last real one).
  void end_locked(const std::string& message);
  // Shuts every connection and joins the threads (abort and destroy).
  void close_all();

  // The transport, for the operations (run on stream workers).
  bool send_cts(int peer);
  bool send_data(int peer, OpKind kind, const void* bytes, size_t n);
  // Waits for the next clear-to-send from / data frame of `peer`. False: the
  // communicator failed (timeout, abort, closed connection); `what` and
  // `hint` describe the waiting operation for the error message.
  bool wait_cts(int peer, Clock::time_point deadline, const std::string& what, const std::string& hint);
  bool wait_data(int peer, Clock::time_point deadline, const std::string& what, const std::string& hint,
                 DataFrame* out);

 private:
  void read_loop(int peer);
  bool write_all(int peer, const void* p, size_t n);
  bool wait_for(int peer, bool cts, Clock::time_point deadline, const std::string& what, const std::string& hint);
};

// The handle ncclComm_t points to; operations queued on streams hold the
// implementation, so it outlives ncclCommDestroy until they are done.
}  // namespace anvil::emulator::nccl

struct ncclComm {
  std::shared_ptr<anvil::emulator::nccl::CommImpl> impl;
};

namespace anvil::emulator::nccl {

// ANVIL_EMU_NCCL_TIMEOUT (seconds, fractions allowed; default 60): how long
// one operation may wait for a peer before the watchdog fails it.
std::chrono::milliseconds op_timeout();

// The last error message (for ncclGetLastError when no communicator is named).
void set_last_error(const std::string& message);
std::string last_error();

}  // namespace anvil::emulator::nccl
