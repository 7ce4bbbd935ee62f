// Rung 01 — naive: one thread per output element, the textbook triple loop.
//
// What it is: thread (x, y) of the grid computes C[row][col] with
// row = x and col = y, reading a row of A and a column of B straight from
// global memory.
//
// Why it is slow: threadIdx.x (the fastest-varying index inside a warp) walks
// down the ROWS. The 32 threads of a warp therefore read A at addresses lda
// floats apart and write C at addresses ldc floats apart: every load is its
// own 32-byte memory transaction, so ~1/8 of each transaction is used. Each
// A and B element is re-read from global memory (L2 at best) N and M times.
// Expected bottleneck: memory transactions (uncoalesced).
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm/gemm_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int kBlock = 32;  // 32 x 32 threads per block

__global__ void gemm_naive(Fp32Args p) {
  const int row = blockIdx.x * kBlock + threadIdx.x;  // the mistake rung 02 fixes
  const int col = blockIdx.y * kBlock + threadIdx.y;
  if (row >= p.M || col >= p.N) return;
  float acc = 0.0f;
  for (int k = 0; k < p.K; ++k) acc += p.A[row * p.lda + k] * p.B[k * p.ldb + col];
  store_fp32(&p.C[row * p.ldc + col], acc, p.alpha, p.beta);
}

}  // namespace

namespace detail {
void launch_naive(const GemmArgs& args, cudaStream_t stream) {
  const Fp32Args p = fp32_args(args);
  dim3 grid(ceil_div(p.M, kBlock), ceil_div(p.N, kBlock));
  launch_kernel(gemm_naive, grid, dim3(kBlock, kBlock), 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_naive");
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
