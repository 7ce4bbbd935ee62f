#pragma once
// The one place CPU kernels multiply matrices: C = alpha * op(A) @ op(B) + beta * C,
// every matrix row-major with its leading dimension, op() a transpose when asked.
//
// float32 goes to oneDNN's sgemm when anvil was built with oneDNN: oneDNN picks
// its kernel from the CPU's feature bits (CPUID), so a CPU newer than the
// library still gets its AVX2 or AVX-512 kernels. OpenBLAS picks its kernel from
// a table of CPU models, and on a model it does not know it falls back to SSE3
// code, several times slower (kernels/cpu/README.md has the measurements). float64 has no
// oneDNN GEMM and stays on OpenBLAS; it serves gradient checks, not training.
// `ANVIL_CPU_GEMM=openblas` forces OpenBLAS for float32 too (to compare them).
//
// Called inside an OpenMP parallel region, both libraries run on the calling
// thread alone; outside one they use every OpenMP thread.
#include <cstdint>
#include <string>

#include "kernels/cpu_info.h"

namespace anvil::cpu {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Whether float32 GEMMs run on oneDNN (built with it, and not ANVIL_CPU_GEMM=openblas).
bool float32_gemm_on_onednn();

// Which library and kernel a GEMM of each precision runs on this CPU.
GemmKernel float32_gemm_kernel();
GemmKernel float64_gemm_kernel();

// The best vector ISA this CPU offers: "avx512_core", "avx2", "avx", "sse4.1" or "sse2".
std::string cpu_isa();
// Orders ISA names: sse2 < sse4.1 < avx < avx2 < avx512_core (and its
// extensions); -1 for a name it does not know.
int isa_rank(const std::string& isa);

}  // namespace anvil::cpu
