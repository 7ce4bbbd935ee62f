#pragma once
// Whether tests can start NCCL ranks here: the emulated GPU (any number of
// ranks share its devices) or one real GPU per rank. Shared by the tests that
// run workers on CUDA tensors (process_group/nccl/test_nccl_processes.cpp,
// pipeline/test_pipeline_nccl.cpp); they skip with the reason otherwise.
#include <string>

#include "distributed/process_group/process_group_factory.h"
#include "kernels/cuda_info.h"

namespace anvil::test {

inline bool emulated_gpu() { return anvil::cuda::device_properties(0).name.find("emulated") != std::string::npos; }

// Empty when `nproc` NCCL ranks can run here, else why not.
inline std::string why_nccl_ranks_cannot_run(int nproc) {
  if (!anvil::distributed::nccl_available()) return "this build has no NCCL backend (no CUDA or no NCCL)";
  if (!anvil::cuda::is_available()) return "no CUDA GPU visible";
  if (!emulated_gpu() && anvil::cuda::device_count() < nproc)
    return "NCCL needs one GPU per rank: " + std::to_string(nproc) + " ranks, " +
           std::to_string(anvil::cuda::device_count()) + " GPUs";
  return "";
}

}  // namespace anvil::test
