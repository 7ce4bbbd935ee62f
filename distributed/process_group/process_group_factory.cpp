#include "distributed/process_group/process_group_factory.h"

#include <cstdlib>
#include <mutex>

#include "core/base/error.h"
#include "distributed/process_group/gloo/gloo_process_group.h"
#ifdef ANVIL_HAS_NCCL
#include "distributed/process_group/nccl/nccl_process_group.h"
#endif

namespace anvil::distributed {

bool nccl_available() {
#ifdef ANVIL_HAS_NCCL
  return true;
#else
  return false;
#endif
}

namespace {

std::shared_ptr<ProcessGroup> make_nccl(const std::shared_ptr<Store>& store, int rank, int size,
                                        const MakeProcessGroupOptions& options, int device_index) {
#ifdef ANVIL_HAS_NCCL
  return std::make_shared<NcclProcessGroup>(store, rank, size, options.group, options.store_prefix + "nccl/",
                                            device_index);
#else
  fail(
      "process group: CUDA tensors need the NCCL backend, but this build of anvil has none "
      "(built without CUDA, or NCCL was not found at configure time)");
#endif
}

// Routes each call to Gloo or NCCL by the device of its tensors.
class DeviceDispatchProcessGroup : public ProcessGroup {
 public:
  DeviceDispatchProcessGroup(std::shared_ptr<Store> store, int rank, int size, const MakeProcessGroupOptions& options)
      : ProcessGroup(rank, size), store_(std::move(store)), options_(options) {
    gloo_ = std::make_shared<GlooProcessGroup>(store_, rank, size, options.group, options.store_prefix + "gloo/");
  }
  std::string backend_name() const override { return "cpu:gloo,cuda:nccl"; }

  WorkHandle all_reduce(Tensor& t, ReduceOp op) override { return pick(t, "all_reduce").all_reduce(t, op); }
  WorkHandle broadcast(Tensor& t, int root) override { return pick(t, "broadcast").broadcast(t, root); }
  WorkHandle all_gather(Tensor& out, const Tensor& in) override {
    same_device(out, in, "all_gather");
    return pick(in, "all_gather").all_gather(out, in);
  }
  WorkHandle reduce_scatter(Tensor& out, const Tensor& in, ReduceOp op) override {
    same_device(out, in, "reduce_scatter");
    return pick(in, "reduce_scatter").reduce_scatter(out, in, op);
  }
  WorkHandle all_to_all_single(Tensor& out, const Tensor& in, const std::vector<int64_t>& out_splits,
                               const std::vector<int64_t>& in_splits) override {
    same_device(out, in, "all_to_all");
    return pick(in, "all_to_all").all_to_all_single(out, in, out_splits, in_splits);
  }
  WorkHandle send(const Tensor& t, int dst, int tag) override { return pick(t, "send").send(t, dst, tag); }
  WorkHandle recv(Tensor& t, int src, int tag) override { return pick(t, "recv").recv(t, src, tag); }
  // One backend for the whole batch: mixing devices cannot be one NCCL group.
  std::vector<WorkHandle> batch_isend_irecv(const std::vector<P2POp>& ops) override {
    if (ops.empty()) return {};
    for (size_t i = 0; i < ops.size(); ++i) {
      ANVIL_CHECK(ops[i].tensor.defined(), "batch_isend_irecv: op ", i, " has an undefined tensor");
      ANVIL_CHECK(ops[i].tensor.device() == ops.front().tensor.device(), "batch_isend_irecv: op ", i,
                  "'s tensor is on ", ops[i].tensor.device().str(), " but op 0's on ",
                  ops.front().tensor.device().str(), "; one batch runs on one backend (split it by device)");
    }
    return pick(ops.front().tensor, "batch_isend_irecv").batch_isend_irecv(ops);
  }
  // On Gloo: it needs no device, and every rank has that group.
  WorkHandle barrier() override { return gloo_->barrier(); }

 private:
  void same_device(const Tensor& a, const Tensor& b, const char* op) {
    ANVIL_CHECK(a.defined() && b.defined(), op, ": undefined tensor");
    ANVIL_CHECK(a.device() == b.device(), op, ": output is on ", a.device().str(), " but input on ", b.device().str());
  }
  ProcessGroup& pick(const Tensor& t, const char* op) {
    ANVIL_CHECK(t.defined(), op, ": undefined tensor");
    if (t.device().is_cpu()) return *gloo_;
    std::lock_guard<std::mutex> lock(mu_);
    if (!nccl_) {
      nccl_ = make_nccl(store_, rank(), size(), options_, t.device().index);
      nccl_device_ = t.device().index;
    }
    ANVIL_CHECK(t.device().index == nccl_device_, op, ": tensor on ", t.device().str(),
                " but this rank's NCCL communicator is on cuda:", nccl_device_,
                " (one CUDA device per rank; set the device from LOCAL_RANK)");
    return *nccl_;
  }

  std::shared_ptr<Store> store_;
  MakeProcessGroupOptions options_;
  std::shared_ptr<ProcessGroup> gloo_;
  std::mutex mu_;
  std::shared_ptr<ProcessGroup> nccl_;
  int nccl_device_ = -1;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                 const MakeProcessGroupOptions& options) {
  if (options.backend == "gloo")
    return std::make_shared<GlooProcessGroup>(store, rank, size, options.group, options.store_prefix + "gloo/");
  if (options.backend == "auto" || options.backend == "cpu:gloo,cuda:nccl")
    return std::make_shared<DeviceDispatchProcessGroup>(store, rank, size, options);
  if (options.backend == "nccl") {
    // One device per rank: LOCAL_RANK's, as the launcher arranges.
    const char* lr = std::getenv("LOCAL_RANK");
    return make_nccl(store, rank, size, options, lr ? std::atoi(lr) : 0);
  }
  fail("make_process_group: unknown backend '", options.backend, "' (expected auto, gloo or nccl)");
}

}  // namespace anvil::distributed
