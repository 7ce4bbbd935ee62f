// LU with partial pivoting and the triangular solves after it, for the
// emulated GPU (a real GPU runs cuSOLVER, lu.cpp). One block per matrix for
// the factorization, its columns spread over the block's threads. The solve runs
// one thread per right-hand side column. Meant for the small matrices tests
// use; not tuned.
#include "kernels/cusolver/lu_kernels.h"

#include <algorithm>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::cuda {
namespace {

constexpr int kFactorThreads = 128;
constexpr int kSolveThreads = 64;
constexpr int64_t kMaxGridY = 65535;

template <typename T> __device__ T magnitude(T v) { return v < T(0) ? -v : v; }

// Column-major: element (row, col) of an n x n matrix is m[row + col * n].
// Each thread owns the columns j = threadIdx.x (mod blockDim.x) and is the
// only one to write them (the row swaps, the scaling of column k, the
// trailing update): every element has one writer per launch, so the block's
// barriers alone order the reads of other threads' columns.
template <typename T> __global__ void lu_factor_kernel(T* a, int* pivots, int* info, int64_t n) {
  T* m = a + static_cast<int64_t>(blockIdx.x) * n * n;
  int* piv = pivots + static_cast<int64_t>(blockIdx.x) * n;
  int first_zero = 0;  // as LAPACK's info; thread 0 writes it
  for (int64_t k = 0; k < n; ++k) {
    __syncthreads();  // column k's last update (by its owner) is done
    // Every thread finds the pivot row itself: no shared state to hand round.
    int64_t p = k;
    T best = magnitude(m[k + k * n]);
    for (int64_t i = k + 1; i < n; ++i) {
      const T v = magnitude(m[i + k * n]);
      if (v > best) p = i, best = v;
    }
    if (threadIdx.x == 0) {
      piv[k] = static_cast<int>(p + 1);
      if (best == T(0) && first_zero == 0) first_zero = static_cast<int>(k + 1);
    }
    __syncthreads();  // everyone has read column k before its owner changes it
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      if (p != k) {  // the whole row, L's part included, as LAPACK
        const T t = m[k + j * n];
        m[k + j * n] = m[p + j * n];
        m[p + j * n] = t;
      }
      // A zero pivot means the column below is zero too: nothing to scale.
      if (j == k && m[k + k * n] != T(0))
        for (int64_t i = k + 1; i < n; ++i) m[i + k * n] /= m[k + k * n];
    }
    __syncthreads();  // column k holds L's multipliers; row k is swapped in
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      if (j <= k) continue;  // this thread's columns right of k
      const T u = m[k + j * n];
      for (int64_t i = k + 1; i < n; ++i) m[i + j * n] -= m[i + k * n] * u;
    }
  }
  if (threadIdx.x == 0) info[blockIdx.x] = first_zero;
}

template <typename T>
__global__ void lu_solve_kernel(const T* lu, const int* pivots, T* b, int64_t batch, int64_t n, int64_t rhs) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= rhs) return;
  for (int64_t mat = blockIdx.y; mat < batch; mat += gridDim.y) {
    const T* m = lu + mat * n * n;
    const int* piv = pivots + mat * n;
    T* x = b + mat * n * rhs + col * n;
    for (int64_t k = 0; k < n; ++k) {  // the row swaps, in order
      const int64_t p = piv[k] - 1;
      if (p != k) {
        const T t = x[k];
        x[k] = x[p];
        x[p] = t;
      }
    }
    for (int64_t i = 0; i < n; ++i) {  // L y = P b, L unit lower
      T acc = x[i];
      for (int64_t j = 0; j < i; ++j) acc -= m[i + j * n] * x[j];
      x[i] = acc;
    }
    for (int64_t i = n - 1; i >= 0; --i) {  // U x = y
      T acc = x[i];
      for (int64_t j = i + 1; j < n; ++j) acc -= m[i + j * n] * x[j];
      x[i] = acc / m[i + i * n];
    }
  }
}

template <typename T> void factor(void* a, int* pivots, int* info, int64_t batch, int64_t n, cudaStream_t stream) {
  // One block per matrix; gridDim.x reaches 2^31 - 1.
  ANVIL_CHECK(batch <= (int64_t{1} << 31) - 1, "lu_factor: batch of ", batch, " matrices is too large");
  launch_kernel(lu_factor_kernel<T>, dim3(static_cast<unsigned>(batch)), kFactorThreads, 0, stream)(static_cast<T*>(a),
                                                                                                    pivots, info, n);
  ANVIL_CUDA_CHECK_LAUNCH("linalg.lu_factor");
}

template <typename T>
void solve(const void* lu, const int* pivots, void* b, int64_t batch, int64_t n, int64_t rhs, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((rhs + kSolveThreads - 1) / kSolveThreads),
                  static_cast<unsigned>(std::min(batch, kMaxGridY)));
  launch_kernel(lu_solve_kernel<T>, grid, kSolveThreads, 0, stream)(static_cast<const T*>(lu), pivots,
                                                                    static_cast<T*>(b), batch, n, rhs);
  ANVIL_CUDA_CHECK_LAUNCH("linalg.lu_solve");
}

}  // namespace

void lu_factor_dense(DType dtype, void* a, int* pivots, int* info, int64_t batch, int64_t n, cudaStream_t stream) {
  if (dtype == kFloat64)
    factor<double>(a, pivots, info, batch, n, stream);
  else
    factor<float>(a, pivots, info, batch, n, stream);
}

void lu_solve_dense(DType dtype, const void* lu, const int* pivots, void* b, int64_t batch, int64_t n, int64_t rhs,
                    cudaStream_t stream) {
  if (dtype == kFloat64)
    solve<double>(lu, pivots, b, batch, n, rhs, stream);
  else
    solve<float>(lu, pivots, b, batch, n, rhs, stream);
}

}  // namespace anvil::cuda
