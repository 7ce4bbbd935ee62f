#pragma once
// The hand-written CUDA kernels by family, each at a fixed shape, for the
// emulated GPU's memory counters (kernels/cuda/emulator/profile.h): the
// kernel report (main.cpp) prints them, and tests/kernels/cuda/emulator/
// test_memory_efficiency.cpp holds the memory-bound ones to their targets.
// Each family runs one anvil op on CUDA tensors made beforehand, so only the
// op's own kernels are counted.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/emulator/profile.h"

namespace anvil::kernel_report {

enum class Access {
  Contiguous,  // a memory-bound kernel on its contiguous path: held to ideal sectors
  Strided,  // a strided or transposing path: shown, not held
  Gemm,  // a rung of the GEMM ladder: compute-bound, shown with its flops
  Fused,  // a fused compute kernel (attention): shown with its flops, not held
};

struct KernelFamily {
  std::string name;  // "softmax/rows", "gemm/02_coalesced"
  std::string shape;  // "256x1024"
  std::string dtype;
  Access access = Access::Contiguous;
  double compulsory_bytes = 0;  // every input read once, every output written once
  double flops = 0;  // GEMM rungs: 2*M*N*K
  std::function<void()> run;  // launches the op (inputs exist already)
};

// `elements`: the size of the large tensors of each family (a multiple of 1024).
// `gemm_size`: M = N = K of the GEMM rungs (0: none).
std::vector<KernelFamily> kernel_families(int64_t elements, int64_t gemm_size);

// Runs one family with the emulator's counters on and returns its launches.
std::vector<emulator::KernelProfile> profile_family(const KernelFamily& family);

}  // namespace anvil::kernel_report
