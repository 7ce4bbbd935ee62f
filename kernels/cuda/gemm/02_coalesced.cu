// Rung 02 — coalesced: the same arithmetic as 01, threads mapped the other way.
//
// What it adds: threadIdx.x now walks along the COLUMNS of C. The 32 threads
// of a warp read 32 consecutive floats of a row of B (one 128-byte
// transaction instead of 32), all read the same element of A (a broadcast),
// and write 32 consecutive floats of C.
//
// Why it is faster: the same number of loads, but each memory transaction is
// fully used. Expected bottleneck: still global memory / L2 bandwidth: each
// output element does 2 loads per multiply-add and nothing is reused from
// on-chip memory.
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm/gemm_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int kBlockX = 32;  // one warp across the columns
constexpr int kBlockY = 8;  // 256 threads per block

__global__ void gemm_coalesced(Fp32Args p) {
  const int col = blockIdx.x * kBlockX + threadIdx.x;
  const int row = blockIdx.y * kBlockY + threadIdx.y;
  if (row >= p.M || col >= p.N) return;
  const float* a = p.A + row * p.lda;
  float acc = 0.0f;
  for (int k = 0; k < p.K; ++k) acc += a[k] * p.B[k * p.ldb + col];
  store_fp32(&p.C[row * p.ldc + col], acc, p.alpha, p.beta);
}

}  // namespace

namespace detail {
void launch_coalesced(const GemmArgs& args, cudaStream_t stream) {
  const Fp32Args p = fp32_args(args);
  dim3 grid(ceil_div(p.N, kBlockX), ceil_div(p.M, kBlockY));
  launch_kernel(gemm_coalesced, grid, dim3(kBlockX, kBlockY), 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_coalesced");
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
