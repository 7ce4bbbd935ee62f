#pragma once
// Whether CPU kernels that run right before GEMMs should use OpenMP threads.
//
// Not when OpenBLAS runs its own pthread pool (Debian's default
// libopenblas0-pthread): libgomp's workers busy-wait for milliseconds after
// each parallel region and take the cores from the OpenBLAS threads of the
// GEMM that follows. On 2 cores a parallel im2col made conv 2-3x slower than
// a serial one, and a 512^3 sgemm right after an OpenMP region takes about
// twice its time. An OpenMP-built (or single-threaded) OpenBLAS shares
// libgomp's team, and then the threads pay off. Defined in matmul.cpp.
namespace anvil::cpu {

bool use_openmp_beside_blas();

}  // namespace anvil::cpu
