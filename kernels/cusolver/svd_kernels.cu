// One-sided (Hestenes) Jacobi SVD for the emulated GPU, where cuSOLVER is
// absent (a real GPU runs gesvdj, svd.cpp). Why Jacobi: it needs no
// bidiagonalization, only plane rotations of column pairs, and it is accurate
// to the last bits of the small singular values that ord -2 reads. Meant for
// the small matrices tests use; not tuned.
//
// W (the matrix, or its transpose when it is wide, so that W has rows >=
// cols = k) is rotated in place, sweep after sweep over every column pair,
// until its columns are orthogonal: W V = U S. S is then the column norms, U
// the normalized columns and V the product of the rotations.
//
// Why one thread per matrix rather than a block: a block would hand the
// column pairs round its threads (the round-robin order), so a column would
// be written by different threads from step to step. On global memory that is
// two writers of one byte in a launch, which the emulator's racecheck rejects
// however the barriers order them (it cannot see that they do); keeping W and
// V in shared memory instead would cap the matrix size. One writer per
// matrix keeps the kernel plain and checkable, and the matrices here are small.
#include "kernels/cusolver/svd_kernels.h"

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 64;  // matrices per block
constexpr int kMaxSweeps = 40;  // Jacobi converges quadratically: real inputs need under 10

template <typename T> __device__ T magnitude(T v) { return v < T(0) ? -v : v; }

// A rows x cols matrix with element (r, c) at r * rs + c * cs.
template <typename T> struct Columns {
  T* data;
  int64_t rows, rs, cs;
  __device__ T& at(int64_t r, int64_t c) const { return data[r * rs + c * cs]; }
};

// Rotates columns p and q of w (and of v, when given) to make them
// orthogonal; returns whether they were not already, to within tol.
template <typename T> __device__ bool rotate(const Columns<T>& w, const Columns<T>* v, int64_t p, int64_t q, T tol) {
  T alpha = 0, beta = 0, gamma = 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    const T x = w.at(r, p), y = w.at(r, q);
    alpha += x * x;
    beta += y * y;
    gamma += x * y;
  }
  if (gamma == T(0) || magnitude(gamma) <= tol * sqrt(alpha) * sqrt(beta)) return false;
  // tan of the angle: the smaller root of t^2 + 2 zeta t - 1 = 0; written so
  // that zeta^2 cannot overflow when the columns' norms differ widely.
  const T zeta = (beta - alpha) / (T(2) * gamma), az = magnitude(zeta);
  const T root = az > T(1) ? az * sqrt(T(1) + (T(1) / az) * (T(1) / az)) : sqrt(T(1) + az * az);
  const T t = (zeta < T(0) ? T(-1) : T(1)) / (az + root);
  const T c = T(1) / sqrt(T(1) + t * t), s = c * t;
  for (int64_t r = 0; r < w.rows; ++r) {
    const T x = w.at(r, p), y = w.at(r, q);
    w.at(r, p) = c * x - s * y;
    w.at(r, q) = s * x + c * y;
  }
  if (v)
    for (int64_t r = 0; r < v->rows; ++r) {
      const T x = v->at(r, p), y = v->at(r, q);
      v->at(r, p) = c * x - s * y;
      v->at(r, q) = s * x + c * y;
    }
  return true;
}

template <typename T> __device__ void swap_columns(const Columns<T>& m, int64_t a, int64_t b) {
  for (int64_t r = 0; r < m.rows; ++r) {
    const T t = m.at(r, a);
    m.at(r, a) = m.at(r, b);
    m.at(r, b) = t;
  }
}

template <typename T>
__global__ void svd_jacobi_kernel(T* a, T* s, T* u, T* v, int* info, int64_t batch, int64_t m, int64_t n) {
  const int64_t mat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (mat >= batch) return;
  const bool wide = m < n, vectors = u != nullptr;
  const int64_t rows = wide ? n : m, cols = wide ? m : n;
  // A wide matrix's transpose is the same memory read row-major.
  const Columns<T> w{a + mat * m * n, rows, wide ? m : 1, wide ? 1 : m};
  T* sv = s + mat * cols;
  // W = L S R^T: L is U and R is V, or, for a wide A = W^T, L is V and R is U.
  T* left = !vectors ? nullptr : wide ? v + mat * n * cols : u + mat * m * cols;
  const Columns<T> right{!vectors ? nullptr : wide ? u + mat * m * cols : v + mat * n * cols, cols, 1, cols};
  const Columns<T>* rot = vectors ? &right : nullptr;
  if (vectors)
    for (int64_t i = 0; i < cols * cols; ++i) right.data[i] = i % cols == i / cols ? T(1) : T(0);

  const T eps = sizeof(T) == 4 ? T(1.1920929e-7) : T(2.220446049250313e-16);
  const T tol = eps * static_cast<T>(rows);
  bool converged = false;
  for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
    converged = true;
    for (int64_t p = 0; p + 1 < cols; ++p)
      for (int64_t q = p + 1; q < cols; ++q)
        if (rotate(w, rot, p, q, tol)) converged = false;
  }

  for (int64_t j = 0; j < cols; ++j) {
    T acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += w.at(r, j) * w.at(r, j);
    sv[j] = sqrt(acc);
  }
  // Descending, as LAPACK; a selection sort moves each column at most once.
  for (int64_t i = 0; i + 1 < cols; ++i) {
    int64_t best = i;
    for (int64_t j = i + 1; j < cols; ++j)
      if (sv[j] > sv[best]) best = j;
    if (best == i) continue;
    const T t = sv[i];
    sv[i] = sv[best];
    sv[best] = t;
    if (vectors) {
      swap_columns(w, i, best);
      swap_columns(right, i, best);
    }
  }
  info[mat] = converged ? 0 : static_cast<int>(cols + 1);
  // A zero singular value leaves its column of L zero (LAPACK would complete
  // an orthonormal basis); the ops built on this never read such a column.
  if (vectors)
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int64_t r = i % rows, c = i / rows;
      left[i] = sv[c] > T(0) ? w.at(r, c) / sv[c] : T(0);
    }
}

template <typename T>
void jacobi(void* a, void* s, void* u, void* v, int* info, int64_t batch, int64_t m, int64_t n, cudaStream_t stream) {
  // One thread per matrix; gridDim.x reaches 2^31 - 1.
  const int64_t blocks = (batch + kThreads - 1) / kThreads;
  ANVIL_CHECK(blocks <= (int64_t{1} << 31) - 1, "svd: batch of ", batch, " matrices is too large");
  launch_kernel(svd_jacobi_kernel<T>, dim3(static_cast<unsigned>(blocks)), kThreads, 0, stream)(
      static_cast<T*>(a), static_cast<T*>(s), static_cast<T*>(u), static_cast<T*>(v), info, batch, m, n);
  ANVIL_CUDA_CHECK_LAUNCH("linalg.svd");
}

}  // namespace

void svd_jacobi(DType dtype, void* a, void* s, void* u, void* v, int* info, int64_t batch, int64_t m, int64_t n,
                cudaStream_t stream) {
  if (dtype == kFloat64)
    jacobi<double>(a, s, u, v, info, batch, m, n, stream);
  else
    jacobi<float>(a, s, u, v, info, batch, m, n, stream);
}

}  // namespace anvil::cuda
