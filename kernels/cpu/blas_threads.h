#pragma once
// Whether CPU kernels that run right before GEMMs should use OpenMP threads.
//
// Not when OpenBLAS runs its own pthread pool (Debian's default
// libopenblas0-pthread): libgomp's workers busy-wait for milliseconds after
// each parallel region and take the cores from the OpenBLAS threads of the
// GEMM that follows: on a machine with few cores a parallel im2col made the
// conv slower than a serial one, and an sgemm right after an OpenMP region
// runs with its threads waiting for cores. An OpenMP-built (or single-threaded) OpenBLAS shares
// libgomp's team, and then the threads pay off. Defined in matmul.cpp.
namespace anvil::cpu {

bool use_openmp_beside_blas();

}  // namespace anvil::cpu
