#pragma once
/// @file
/// DataParallel: one process driving several devices, after
/// torch.nn.DataParallel. Each forward copies the parameters to every device
/// (through autograd), splits the batch along dim 0, runs the replicas in
/// parallel threads, and gathers the outputs on the output device; backward
/// then sums every replica's gradient into the original parameters.
///
///     auto dp = std::make_shared<distributed::DataParallel>(
///         model, [] { return samples::make_mlp(); }, distributed::DataParallelOptions{.devices = {...}});
///     Tensor logits = dp->forward(x);  // x on devices[0]
///     Tensor out = (*dp)(ids, mask);     // several inputs: forward_inputs, each split along dim 0
///
/// Prefer DistributedDataParallel almost always. C++ has no GIL, so DP's
/// threads do run in parallel, but every step still copies all parameters
/// from the first device to every other one, gathers all outputs back to it
/// and reduces all gradients onto it: that device's memory and links carry
/// N times the traffic, and CPU-side work is serialised around it. DDP keeps
/// one replica per process, moves only gradients (bucketed, overlapped with
/// backward, split evenly over the links by the ring), and scales to many
/// machines. DP is for a quick multi-GPU run inside one process.
///
/// Replicas are built once by `make_replica` (a module of the same
/// architecture; its own initial values are irrelevant) and moved to their
/// devices; before each forward their parameters are rebound to
/// differentiable copies of the originals. Buffer updates made by replicas
/// (e.g. BatchNorm running statistics) are discarded, as in PyTorch; replica
/// 0 is the original module itself.
#include <functional>
#include <memory>
#include <vector>

#include "core/base/device.h"
#include "nn/module.h"

namespace anvil::distributed {

/// DataParallel's settings.
struct DataParallelOptions {
  /// Devices to run on, the first holding the module and the outputs. Empty:
  /// every visible CUDA device, or just the module's device when there is at
  /// most one (then forward simply runs the module). A device may repeat (two
  /// replicas on the CPU), which exercises the replicated path without GPUs.
  std::vector<Device> devices;
};

/// Single-process data parallelism over several GPUs, as torch.nn.DataParallel (see the file comment).
class DataParallel : public nn::Module {
 public:
  /// Makes one replica of the module (same architecture; the weights are copied in).
  using ReplicaFactory = std::function<std::shared_ptr<nn::Module>()>;

  /// make_replica may be empty when only one device is used.
  DataParallel(std::shared_ptr<nn::Module> module, ReplicaFactory make_replica, DataParallelOptions options = {});

  Tensor forward(const Tensor& x) override;
  /// A module with several inputs (nn::Module::forward_inputs): every defined
  /// input is split along dim 0, as torch's scatter does, so all of them must
  /// share the batch size; undefined ones (absent optional inputs) stay so.
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

  nn::Module& module() const { return *module_; }  ///< The wrapped module (replica 0).
  const std::vector<Device>& devices() const { return devices_; }  ///< The devices the replicas run on.

 private:
  void bind_replica(size_t i);
  /// Splits the inputs over the devices, runs the replicas, gathers on devices[0].
  Tensor run_replicas(const std::vector<Tensor>& inputs, bool several);

  std::shared_ptr<nn::Module> module_;
  std::vector<Device> devices_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;  ///< replicas_[0] == module_
};

}  // namespace anvil::distributed
