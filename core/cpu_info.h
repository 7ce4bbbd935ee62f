#pragma once
/// @file
/// What the CPU backend runs on this machine, for users and the layers above
/// core (the Trainer's report header): anvil::cpu_capability() names the CPU,
/// its best vector ISA and the library and kernel each GEMM and convolution
/// uses; to_string(CpuCapability) prints it on one line. anvil/anvil.h brings
/// it. The CPU backend answers the question (kernels/cpu_info.h, implemented
/// in kernels/cpu/cpu_capability.cpp); this header re-exports its declarations
/// so that nothing above core includes a kernels/ header.
#include "kernels/cpu_info.h"  // IWYU pragma: export (CpuCapability, GemmKernel, cpu_capability, to_string)
