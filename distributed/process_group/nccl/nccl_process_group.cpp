#include "distributed/process_group/nccl/nccl_process_group.h"

#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/cuda.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "distributed/process_group/nccl/cuda_check.h"

#define ANVIL_NCCL_CHECK(call, what) \
  do { \
    ncclResult_t anvil_nccl_r_ = (call); \
    if (anvil_nccl_r_ != ncclSuccess && anvil_nccl_r_ != ncclInProgress) \
      ::anvil::fail(what, ": ", #call, " failed: ", ncclGetErrorString(anvil_nccl_r_), " (", \
                    ncclGetLastError(nullptr) ? ncclGetLastError(nullptr) : "", ")"); \
  } while (0)

namespace anvil::distributed {

using Clock = std::chrono::steady_clock;

namespace {

ncclDataType_t nccl_dtype(DType t, const std::string& what) {
  switch (t) {
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    case DType::UInt8:
      return ncclUint8;
    case DType::Bool:
      return ncclUint8;
  }
  fail(what, ": unsupported dtype");
}

ncclRedOp_t nccl_op(ReduceOp op, DType t, const std::string& what) {
  ANVIL_CHECK(t != DType::Bool, what, ": cannot reduce bool tensors");
  ANVIL_CHECK(!(op == ReduceOp::Avg && !is_floating(t)), what, ": ReduceOp::Avg on ", dtype_name(t),
              " tensors is not supported (an integer average would truncate); use Sum and divide");
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  fail(what, ": unknown ReduceOp");
}

// The CUDA stream anvil queues work on now on `device` (NCCL takes raw streams).
cudaStream_t compute_stream(int device) {
  return static_cast<cudaStream_t>(native_stream(current_stream(Device::cuda(device))));
}

}  // namespace

// One collective in flight: its end event on the communication stream, and
// the tensors it reads and writes (kept alive until it completed).
class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclProcessGroup::State> state, std::string name, cudaEvent_t end,
           std::vector<Tensor> tensors)
      : state_(std::move(state)),
        name_(std::move(name)),
        end_(end),
        tensors_(std::move(tensors)),
        start_(Clock::now()) {}
  ~NcclWork() override {
    if (end_) cudaEventDestroy(end_);
  }
  void wait() override;
  bool is_completed() override;

  const std::string& name() const { return name_; }
  Clock::time_point start() const { return start_; }
  cudaEvent_t end() const { return end_; }
  void release_tensors() {
    std::lock_guard<std::mutex> lock(mu_);
    tensors_.clear();
  }

 private:
  std::shared_ptr<NcclProcessGroup::State> state_;
  std::string name_;
  cudaEvent_t end_ = nullptr;
  std::mutex mu_;
  std::vector<Tensor> tensors_;
  Clock::time_point start_;
};

struct NcclProcessGroup::State : std::enable_shared_from_this<State> {
  int rank = 0, size = 1, device = 0;
  ProcessGroupOptions options;
  ncclComm_t comm = nullptr;
  Stream comm_stream;
  cudaStream_t comm_cuda = nullptr;
  void* barrier_buf = nullptr;  // one float on the device, for barrier()

  std::mutex mu;  // guards everything below and serializes NCCL calls
  std::condition_variable cv;
  std::string error;  // set once the communicator was aborted
  bool stopping = false;
  std::list<std::shared_ptr<NcclWork>> in_flight;
  std::thread watchdog;

  std::string prefix(const std::string& op) const {
    return "NcclProcessGroup " + op + " (rank " + std::to_string(rank) + " of " + std::to_string(size) +
           ", cuda:" + std::to_string(device) + ")";
  }

  void throw_if_failed_locked(const std::string& op) const {
    if (!error.empty()) fail(prefix(op), ": the communicator was aborted by an earlier error: ", error);
  }

  // With a non-blocking communicator, calls may return ncclInProgress: wait
  // (bounded) until the communicator is ready again.
  void settle_locked(const std::string& op) {
    auto deadline = Clock::now() + options.timeout;
    ncclResult_t state = ncclInProgress;
    while (true) {
      ANVIL_NCCL_CHECK(ncclCommGetAsyncError(comm, &state), prefix(op));
      if (state != ncclInProgress) break;
      if (Clock::now() >= deadline) {
        abort_locked(prefix(op) + ": NCCL did not finish setting up within " + std::to_string(options.timeout.count()) +
                     " ms (did every rank call it?)");
        throw_if_failed_locked(op);
      }
      std::this_thread::yield();
    }
    if (state != ncclSuccess) {
      abort_locked(prefix(op) + ": NCCL error: " + ncclGetErrorString(state) + last_error_detail());
      throw_if_failed_locked(op);
    }
  }

  // NCCL's own account of the last error (before an abort clears it).
  std::string last_error_detail() const {
    const char* detail = comm ? ncclGetLastError(comm) : nullptr;
    return detail && *detail ? std::string(": ") + detail : std::string();
  }

  void abort_locked(const std::string& reason) {
    if (!error.empty()) return;
    error = reason;
    if (comm) ncclCommAbort(comm);
    comm = nullptr;
    cv.notify_all();
  }

  // Runs `launch` (the NCCL call) on the communication stream, ordered after
  // the caller's current stream; returns the Work.
  WorkHandle run(const std::string& op, std::vector<Tensor> tensors, const std::function<void()>& launch) {
    std::lock_guard<std::mutex> lock(mu);
    throw_if_failed_locked(op);
    nccl_cuda::DeviceGuard guard(device);
    cudaStream_t compute = compute_stream(device);
    cudaEvent_t ready = nullptr, end = nullptr;
    ANVIL_NCCL_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    ANVIL_NCCL_CUDA_CHECK(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
    // The collective reads what the compute stream is still producing.
    ANVIL_NCCL_CUDA_CHECK(cudaEventRecord(ready, compute));
    ANVIL_NCCL_CUDA_CHECK(cudaStreamWaitEvent(comm_cuda, ready, 0));
    cudaEventDestroy(ready);  // safe: destruction is deferred until it completed
    try {
      launch();
      settle_locked(op);
    } catch (...) {
      cudaEventDestroy(end);
      throw;
    }
    ANVIL_NCCL_CUDA_CHECK(cudaEventRecord(end, comm_cuda));
    for (const auto& t : tensors) t.record_stream(comm_stream);
    auto work = std::make_shared<NcclWork>(shared_from_this(), op, end, std::move(tensors));
    in_flight.push_back(work);
    cv.notify_all();
    return work;
  }

  void watch() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::milliseconds(20));
      if (stopping) break;
      if (!error.empty()) {
        for (auto& w : in_flight) w->release_tensors();
        in_flight.clear();
        continue;
      }
      for (auto it = in_flight.begin(); it != in_flight.end();) {
        cudaError_t q = nccl_cuda::query_without_residue(cudaEventQuery((*it)->end()));
        if (q == cudaSuccess) {
          (*it)->release_tensors();
          it = in_flight.erase(it);
          continue;
        }
        if (q != cudaErrorNotReady) {
          abort_locked(prefix((*it)->name()) + ": CUDA error while waiting: " + cudaGetErrorString(q));
          break;
        }
        if (Clock::now() - (*it)->start() > options.timeout) {
          abort_locked(prefix((*it)->name()) + ": did not finish within " + std::to_string(options.timeout.count()) +
                       " ms (a peer died, stopped calling collectives, or passed a different size); "
                       "the communicator was aborted");
          break;
        }
        ++it;
      }
      if (comm && error.empty()) {
        ncclResult_t async = ncclSuccess;
        if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
          abort_locked(prefix("watchdog") + ": NCCL async error: " + ncclGetErrorString(async) +
                       " (a peer likely died)" + last_error_detail());
      }
    }
  }
};

void NcclWork::wait() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->throw_if_failed_locked(name_);
  }
  // Orders the caller's current stream after the collective; the host does
  // not block (errors surface through the watchdog on a later call).
  nccl_cuda::DeviceGuard guard(state_->device);
  cudaStream_t compute = compute_stream(state_->device);
  ANVIL_NCCL_CUDA_CHECK(cudaStreamWaitEvent(compute, end_, 0));
}

bool NcclWork::is_completed() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->error.empty()) return true;  // failed is finished
  }
  return nccl_cuda::query_without_residue(cudaEventQuery(end_)) == cudaSuccess;
}

NcclProcessGroup::NcclProcessGroup(std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options,
                                   const std::string& store_prefix, int device_index)
    : ProcessGroup(rank, size), state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.rank = rank;
  s.size = size;
  s.device = device_index;
  s.options = options;
  std::string what = s.prefix("init");
  ANVIL_CHECK(store != nullptr, what, ": no store");
  ANVIL_CHECK(device_index >= 0 && device_index < cuda::device_count(), what, ": cuda:", device_index,
              " does not exist on this machine");
  nccl_cuda::DeviceGuard guard(device_index);

  // The unique id travels through the store: rank 0 makes it.
  ncclUniqueId id;
  std::string key = store_prefix + "unique_id";
  if (rank == 0) {
    ANVIL_NCCL_CHECK(ncclGetUniqueId(&id), what);
    store->set(key, Bytes(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof id));
  } else {
    Bytes b = store->get(key);
    ANVIL_CHECK(b.size() == sizeof id, what, ": the NCCL unique id in the store has ", b.size(), " bytes, expected ",
                sizeof id);
    std::memcpy(&id, b.data(), sizeof id);
  }

  // Non-blocking, so that a rank that never joins is a timeout, not a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ANVIL_NCCL_CHECK(ncclCommInitRankConfig(&s.comm, size, id, rank, &config), what);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.settle_locked("init");
  }

  s.comm_stream = new_stream(Device::cuda(device_index));
  s.comm_cuda = static_cast<cudaStream_t>(native_stream(s.comm_stream));
  ANVIL_NCCL_CUDA_CHECK(cudaMalloc(&s.barrier_buf, sizeof(float)));
  ANVIL_NCCL_CUDA_CHECK(cudaMemset(s.barrier_buf, 0, sizeof(float)));
  s.watchdog = std::thread([st = state_.get()] { st->watch(); });
}

NcclProcessGroup::~NcclProcessGroup() {
  auto& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
  }
  s.cv.notify_all();
  if (s.watchdog.joinable()) s.watchdog.join();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.comm) {
    // Let queued work finish (bounded by the timeout), then free the
    // communicator; past the timeout abort instead of hanging the exit.
    auto deadline = Clock::now() + s.options.timeout;
    bool idle = false;
    while (!idle && Clock::now() < deadline) {
      idle = nccl_cuda::query_without_residue(cudaStreamQuery(s.comm_cuda)) != cudaErrorNotReady;
      if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (idle)
      ncclCommDestroy(s.comm);
    else
      ncclCommAbort(s.comm);
    s.comm = nullptr;
  }
  // Works in flight hold the state; break that cycle.
  s.in_flight.clear();
  if (s.barrier_buf) cudaFree(s.barrier_buf);
}

int NcclProcessGroup::device_index() const { return state_->device; }

namespace {

void check_cuda_tensor(const NcclProcessGroup::State& s, const std::string& what, const Tensor& t, const char* role) {
  ANVIL_CHECK(t.defined(), what, ": the ", role, " tensor is undefined");
  ANVIL_CHECK(t.device().is_cuda() && t.device().index == s.device, what, ": the ", role, " tensor is on ",
              t.device().str(), "; this group's communicator is on cuda:", s.device);
  ANVIL_CHECK(t.is_contiguous(), what, ": the ", role, " tensor (shape ", t.shape_str(),
              ") is not contiguous; pass .contiguous() and copy the result back");
}

}  // namespace

WorkHandle NcclProcessGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  auto& s = *state_;
  std::string what = s.prefix("all_reduce");
  check_cuda_tensor(s, what, tensor, "");
  ncclRedOp_t rop = nccl_op(op, tensor.dtype(), what);
  ncclDataType_t dt = nccl_dtype(tensor.dtype(), what);
  Tensor t = tensor;
  t.bump_version();
  return s.run("all_reduce", {t}, [&] {
    ANVIL_NCCL_CHECK(
        ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), dt, rop, s.comm, s.comm_cuda), what);
  });
}

WorkHandle NcclProcessGroup::broadcast(Tensor& tensor, int root) {
  auto& s = *state_;
  std::string what = s.prefix("broadcast");
  check_cuda_tensor(s, what, tensor, "");
  ANVIL_CHECK(root >= 0 && root < size(), what, ": root ", root, " is not a rank in [0, ", size(), ")");
  ncclDataType_t dt = nccl_dtype(tensor.dtype(), what);
  Tensor t = tensor;
  t.bump_version();
  return s.run("broadcast", {t}, [&] {
    ANVIL_NCCL_CHECK(
        ncclBroadcast(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), dt, root, s.comm, s.comm_cuda), what);
  });
}

WorkHandle NcclProcessGroup::all_gather(Tensor& output, const Tensor& input) {
  auto& s = *state_;
  std::string what = s.prefix("all_gather");
  check_cuda_tensor(s, what, output, "output");
  check_cuda_tensor(s, what, input, "input");
  ANVIL_CHECK(output.dtype() == input.dtype(), what, ": output is ", dtype_name(output.dtype()), " but input is ",
              dtype_name(input.dtype()));
  ANVIL_CHECK(output.numel() == input.numel() * size(), what, ": output has ", output.numel(),
              " elements; expected world size ", size(), " x input numel ", input.numel());
  ncclDataType_t dt = nccl_dtype(input.dtype(), what);
  Tensor out = output, in = input;
  out.bump_version();
  return s.run("all_gather", {out, in}, [&] {
    ANVIL_NCCL_CHECK(
        ncclAllGather(in.data_ptr(), out.data_ptr(), static_cast<size_t>(in.numel()), dt, s.comm, s.comm_cuda), what);
  });
}

WorkHandle NcclProcessGroup::reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) {
  auto& s = *state_;
  std::string what = s.prefix("reduce_scatter");
  check_cuda_tensor(s, what, output, "output");
  check_cuda_tensor(s, what, input, "input");
  ANVIL_CHECK(output.dtype() == input.dtype(), what, ": output is ", dtype_name(output.dtype()), " but input is ",
              dtype_name(input.dtype()));
  ANVIL_CHECK(input.numel() == output.numel() * size(), what, ": input has ", input.numel(),
              " elements; expected world size ", size(), " x output numel ", output.numel());
  ncclRedOp_t rop = nccl_op(op, input.dtype(), what);
  ncclDataType_t dt = nccl_dtype(input.dtype(), what);
  Tensor out = output, in = input;
  out.bump_version();
  return s.run("reduce_scatter", {out, in}, [&] {
    ANVIL_NCCL_CHECK(ncclReduceScatter(in.data_ptr(), out.data_ptr(), static_cast<size_t>(out.numel()), dt, rop, s.comm,
                                       s.comm_cuda),
                     what);
  });
}

WorkHandle NcclProcessGroup::send(const Tensor& tensor, int dst, int /*tag*/) {
  auto& s = *state_;
  std::string what = s.prefix("send to rank " + std::to_string(dst));
  check_cuda_tensor(s, what, tensor, "");
  ANVIL_CHECK(dst >= 0 && dst < size() && dst != rank(), what, ": destination must be another rank in [0, ", size(),
              ")");
  ncclDataType_t dt = nccl_dtype(tensor.dtype(), what);
  Tensor t = tensor;
  return s.run("send", {t}, [&] {
    ANVIL_NCCL_CHECK(ncclSend(t.data_ptr(), static_cast<size_t>(t.numel()), dt, dst, s.comm, s.comm_cuda), what);
  });
}

WorkHandle NcclProcessGroup::recv(Tensor& tensor, int src, int /*tag*/) {
  auto& s = *state_;
  std::string what = s.prefix("recv from rank " + std::to_string(src));
  check_cuda_tensor(s, what, tensor, "");
  ANVIL_CHECK(src >= 0 && src < size() && src != rank(), what, ": source must be another rank in [0, ", size(), ")");
  ncclDataType_t dt = nccl_dtype(tensor.dtype(), what);
  Tensor t = tensor;
  t.bump_version();
  return s.run("recv", {t}, [&] {
    ANVIL_NCCL_CHECK(ncclRecv(t.data_ptr(), static_cast<size_t>(t.numel()), dt, src, s.comm, s.comm_cuda), what);
  });
}

std::vector<WorkHandle> NcclProcessGroup::batch_isend_irecv(const std::vector<P2POp>& ops) {
  auto& s = *state_;
  if (ops.empty()) return {};
  std::string what = s.prefix("batch_isend_irecv of " + std::to_string(ops.size()) + " ops");
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2POp& op = ops[i];
    const bool is_send = op.kind == P2POp::Kind::Send;
    std::string which = " (op " + std::to_string(i) + ", " + (is_send ? "send to" : "recv from") + " rank " +
                        std::to_string(op.peer) + ")";
    check_cuda_tensor(s, what + which, op.tensor, "");
    ANVIL_CHECK(op.peer >= 0 && op.peer < size() && op.peer != rank(), what, which,
                ": the peer must be another rank in [0, ", size(), ")");
    nccl_dtype(op.tensor.dtype(), what + which);
    tensors.push_back(op.tensor);
    if (!is_send) tensors.back().bump_version();
  }
  WorkHandle work = s.run("batch_isend_irecv", tensors, [&] {
    ANVIL_NCCL_CHECK(ncclGroupStart(), what);
    for (const P2POp& op : ops) {
      const auto count = static_cast<size_t>(op.tensor.numel());
      const ncclDataType_t dt = nccl_dtype(op.tensor.dtype(), what);
      if (op.kind == P2POp::Kind::Send)
        ANVIL_NCCL_CHECK(ncclSend(op.tensor.data_ptr(), count, dt, op.peer, s.comm, s.comm_cuda), what);
      else
        ANVIL_NCCL_CHECK(ncclRecv(op.tensor.data_ptr(), count, dt, op.peer, s.comm, s.comm_cuda), what);
    }
    ANVIL_NCCL_CHECK(ncclGroupEnd(), what);
  });
  return std::vector<WorkHandle>(ops.size(), work);
}

WorkHandle NcclProcessGroup::all_to_all_single(Tensor& output, const Tensor& input,
                                               const std::vector<int64_t>& output_split_sizes,
                                               const std::vector<int64_t>& input_split_sizes) {
  auto& s = *state_;
  std::string what = s.prefix("all_to_all");
  check_cuda_tensor(s, what, output, "output");
  check_cuda_tensor(s, what, input, "input");
  AllToAllPlan plan = plan_all_to_all(what, output, input, output_split_sizes, input_split_sizes, rank(), size());
  ncclDataType_t dt = nccl_dtype(input.dtype(), what);
  Tensor out = output, in = input;
  out.bump_version();
  const size_t item = in.itemsize();
  auto* src = static_cast<char*>(in.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  const int me = rank();
  return s.run("all_to_all", {out, in}, [&] {
    const auto mine = static_cast<size_t>(me);
    if (plan.send_counts[mine] > 0)
      ANVIL_NCCL_CUDA_CHECK(cudaMemcpyAsync(dst + plan.recv_offsets[mine] * item, src + plan.send_offsets[mine] * item,
                                            static_cast<size_t>(plan.send_counts[mine]) * item,
                                            cudaMemcpyDeviceToDevice, s.comm_cuda));
    // Inside one group every send and recv progresses together, so the
    // exchange cannot deadlock whatever order the peers post in.
    ANVIL_NCCL_CHECK(ncclGroupStart(), what);
    for (int peer = 0; peer < size(); ++peer) {
      const auto p = static_cast<size_t>(peer);
      if (peer == me) continue;
      if (plan.send_counts[p] > 0)
        ANVIL_NCCL_CHECK(ncclSend(src + plan.send_offsets[p] * item, static_cast<size_t>(plan.send_counts[p]), dt, peer,
                                  s.comm, s.comm_cuda),
                         what);
      if (plan.recv_counts[p] > 0)
        ANVIL_NCCL_CHECK(ncclRecv(dst + plan.recv_offsets[p] * item, static_cast<size_t>(plan.recv_counts[p]), dt, peer,
                                  s.comm, s.comm_cuda),
                         what);
    }
    ANVIL_NCCL_CHECK(ncclGroupEnd(), what);
  });
}

WorkHandle NcclProcessGroup::barrier() {
  auto& s = *state_;
  std::string what = s.prefix("barrier");
  // No tensor to order with: all-reduce one float on the comm stream, then
  // block the host until it completed (bounded by the timeout).
  WorkHandle w = s.run("barrier", {}, [&] {
    ANVIL_NCCL_CHECK(ncclAllReduce(s.barrier_buf, s.barrier_buf, 1, ncclFloat32, ncclSum, s.comm, s.comm_cuda), what);
  });
  auto* work = static_cast<NcclWork*>(w.get());
  while (nccl_cuda::query_without_residue(cudaEventQuery(work->end())) == cudaErrorNotReady) {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.throw_if_failed_locked("barrier");  // the watchdog aborts past the timeout
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  w->wait();
  return w;
}

}  // namespace anvil::distributed
