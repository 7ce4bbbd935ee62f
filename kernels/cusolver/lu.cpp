// kernel::LuFactor and lu_solve through cuSOLVER's dense getrf/getrs,
// one call per matrix of the batch on the current stream. The emulated GPU
// has no cuSOLVER: kernels/cuda/emulator/lu_paths.cu serves it with the
// hand-written kernels of lu_kernels.cu instead.
#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cusolver/cusolver_handles.h"
#include "kernels/shapes/linalg_checks.h"

namespace anvil::cuda {
namespace {

int getrf_buffer_size(cusolverDnHandle_t h, int n, float* a) {
  int lwork = 0;
  ANVIL_CUSOLVER_CHECK(cusolverDnSgetrf_bufferSize(h, n, n, a, n, &lwork));
  return lwork;
}
int getrf_buffer_size(cusolverDnHandle_t h, int n, double* a) {
  int lwork = 0;
  ANVIL_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(h, n, n, a, n, &lwork));
  return lwork;
}
void getrf(cusolverDnHandle_t h, int n, float* a, float* work, int* ipiv, int* info) {
  ANVIL_CUSOLVER_CHECK(cusolverDnSgetrf(h, n, n, a, n, work, ipiv, info));
}
void getrf(cusolverDnHandle_t h, int n, double* a, double* work, int* ipiv, int* info) {
  ANVIL_CUSOLVER_CHECK(cusolverDnDgetrf(h, n, n, a, n, work, ipiv, info));
}
void getrs(cusolverDnHandle_t h, int n, int nrhs, const float* a, const int* ipiv, float* b, int* info) {
  ANVIL_CUSOLVER_CHECK(cusolverDnSgetrs(h, CUBLAS_OP_N, n, nrhs, a, n, ipiv, b, n, info));
}
void getrs(cusolverDnHandle_t h, int n, int nrhs, const double* a, const int* ipiv, double* b, int* info) {
  ANVIL_CUSOLVER_CHECK(cusolverDnDgetrs(h, CUBLAS_OP_N, n, nrhs, a, n, ipiv, b, n, info));
}

template <typename T>
void factor_batch(CudaRuntime& backend, const View& a, const View& pivots, const View& info, const shapes::LuShape& s) {
  const int device = a.device_index, n = solver_int("lu_factor", s.n);
  cusolverDnHandle_t h = cusolver_handle(device, backend.stream(device));
  T* base = a.ptr<T>();
  Scratch work(backend, device, static_cast<size_t>(getrf_buffer_size(h, n, base)) * sizeof(T));
  for (int64_t i = 0; i < s.batch; ++i)
    getrf(h, n, base + i * s.n * s.n, work.as<T>(), pivots.ptr<int>() + i * s.n, info.ptr<int>() + i);
}

template <typename T>
void solve_batch(CudaRuntime& backend, const View& lu, const View& pivots, const View& b, const shapes::LuShape& s) {
  const int device = b.device_index, n = solver_int("lu_solve", s.n), nrhs = solver_int("lu_solve", s.rhs);
  cusolverDnHandle_t h = cusolver_handle(device, backend.stream(device));
  // getrs reports only bad arguments there, which the checks above exclude.
  Scratch status(backend, device, sizeof(int));
  for (int64_t i = 0; i < s.batch; ++i)
    getrs(h, n, nrhs, lu.ptr<const T>() + i * s.n * s.n, pivots.ptr<const int>() + i * s.n,
          b.ptr<T>() + i * s.n * s.rhs, status.as<int>());
}

}  // namespace

void lu_factor(const View& a, const View& pivots, const View& info) {
  ANVIL_NVTX_RANGE("lu_factor");
  const shapes::LuShape s = shapes::check_lu_factor(a, pivots, info);
  DeviceGuard guard(a.device_index);
  if (s.batch == 0) return;
  if (s.n == 0) {
    ANVIL_CUDA_CHECK(cudaMemsetAsync(info.data, 0, static_cast<size_t>(s.batch) * sizeof(int), stream(a.device_index)));
    return;
  }
  if (a.dtype == kFloat32)
    factor_batch<float>(cuda_runtime(), a, pivots, info, s);
  else
    factor_batch<double>(cuda_runtime(), a, pivots, info, s);
}

void lu_solve(const View& lu, const View& pivots, const View& b) {
  ANVIL_NVTX_RANGE("lu_solve");
  const shapes::LuShape s = shapes::check_lu_solve(lu, pivots, b);
  DeviceGuard guard(b.device_index);
  if (s.batch == 0 || s.n == 0 || s.rhs == 0) return;
  if (b.dtype == kFloat32)
    solve_batch<float>(cuda_runtime(), lu, pivots, b, s);
  else
    solve_batch<double>(cuda_runtime(), lu, pivots, b, s);
}

ANVIL_REGISTER_KERNEL(kernel::LuFactor, CUDA, lu_factor);
ANVIL_REGISTER_KERNEL(kernel::LuSolve, CUDA, lu_solve);

}  // namespace anvil::cuda
