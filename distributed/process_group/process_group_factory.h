#pragma once
/// @file
/// make_process_group: the process group init_process_group builds. With
/// backend "auto" (PyTorch's "cpu:gloo,cuda:nccl") it holds a Gloo group for
/// CPU tensors, created at once, and an NCCL group for CUDA tensors, created
/// on the first CUDA collective (every rank reaches that call in the same
/// order, so the lazy rendezvous matches up). Each call goes to the group of
/// its tensors' device.
#include <memory>
#include <string>

#include "distributed/process_group/process_group.h"
#include "distributed/store/store.h"

namespace anvil::distributed {

/// make_process_group's settings.
struct MakeProcessGroupOptions {
  /// "auto" (Gloo for CPU tensors, NCCL for CUDA tensors), "gloo" or "nccl".
  std::string backend = "auto";
  ProcessGroupOptions group;  ///< the groups' timeout and checks
  /// Every rank passes the same prefix; each group made on one store needs
  /// its own (the default group uses "default/").
  std::string store_prefix = "default/";
};

/// A group of `size` ranks meeting through `store`, holding Gloo and (when built with it) NCCL, each call sent to its
/// tensors' device's backend.
std::shared_ptr<ProcessGroup> make_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                 const MakeProcessGroupOptions& options = {});

/// Whether this build has the NCCL backend (CUDA and NCCL were found).
bool nccl_available();

}  // namespace anvil::distributed
