// kernel::Svd through cuSOLVER's Jacobi SVD (gesvdj, econ = 1: the
// reduced U and V), one call per matrix of the batch on the current stream.
// gesvdj rather than gesvd: gesvd needs m >= n and returns V^T, gesvdj takes
// any shape, returns V (the contract's layout) and is fast on the small and
// medium matrices norms are taken of. gesvdjBatched would save the launches
// for matrices up to 32x32 but returns the full U and V. The emulated GPU has
// no cuSOLVER: kernels/cuda/emulator/svd_paths.cu serves it instead.
//
// Singular values alone (jobz = NOVECTOR) still get real U and V buffers:
// gesvdj writes through them anyway (seen on an H100 with CUDA 13.0: null U/V
// gave CUSOLVER_STATUS_EXECUTION_FAILED and an illegal address that poisoned
// the context; PyTorch allocates them for the same reason).
#include <algorithm>

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

struct GesvdjParams {
  gesvdjInfo_t p = nullptr;
  GesvdjParams() { ANVIL_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&p)); }
  ~GesvdjParams() { cusolverDnDestroyGesvdjInfo(p); }
  GesvdjParams(const GesvdjParams&) = delete;
  GesvdjParams& operator=(const GesvdjParams&) = delete;
};

// Leading dimensions: at least 1 even for an unused U or V.
struct SvdArgs {
  cusolverEigMode_t jobz;
  int m, n, ldu, ldv;
};

int gesvdj_buffer_size(cusolverDnHandle_t h, const SvdArgs& a, const float* A, const float* S, gesvdjInfo_t p) {
  int lwork = 0;
  ANVIL_CUSOLVER_CHECK(
      cusolverDnSgesvdj_bufferSize(h, a.jobz, 1, a.m, a.n, A, a.m, S, nullptr, a.ldu, nullptr, a.ldv, &lwork, p));
  return lwork;
}
int gesvdj_buffer_size(cusolverDnHandle_t h, const SvdArgs& a, const double* A, const double* S, gesvdjInfo_t p) {
  int lwork = 0;
  ANVIL_CUSOLVER_CHECK(
      cusolverDnDgesvdj_bufferSize(h, a.jobz, 1, a.m, a.n, A, a.m, S, nullptr, a.ldu, nullptr, a.ldv, &lwork, p));
  return lwork;
}
void gesvdj(cusolverDnHandle_t h, const SvdArgs& a, float* A, float* S, float* U, float* V, float* work, int lwork,
            int* info, gesvdjInfo_t p) {
  ANVIL_CUSOLVER_CHECK(cusolverDnSgesvdj(h, a.jobz, 1, a.m, a.n, A, a.m, S, U, a.ldu, V, a.ldv, work, lwork, info, p));
}
void gesvdj(cusolverDnHandle_t h, const SvdArgs& a, double* A, double* S, double* U, double* V, double* work, int lwork,
            int* info, gesvdjInfo_t p) {
  ANVIL_CUSOLVER_CHECK(cusolverDnDgesvdj(h, a.jobz, 1, a.m, a.n, A, a.m, S, U, a.ldu, V, a.ldv, work, lwork, info, p));
}

template <typename T>
void svd_batch(CudaRuntime& backend, const View& a, const View& s, const View* u, const View* v, const View& info,
               const shapes::SvdShape& sh) {
  const int device = a.device_index;
  const SvdArgs args{sh.vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR, solver_int("svd", sh.m),
                     solver_int("svd", sh.n), std::max(1, static_cast<int>(sh.m)), std::max(1, static_cast<int>(sh.n))};
  cusolverDnHandle_t h = cusolver_handle(device, backend.stream(device));
  GesvdjParams params;  // default tolerance (machine epsilon), 100 sweeps, sorted descending
  const int lwork = gesvdj_buffer_size(h, args, a.ptr<T>(), s.ptr<T>(), params.p);
  Scratch work(backend, device, static_cast<size_t>(lwork) * sizeof(T));
  // One matrix's unused U and V, overwritten by every matrix of the batch.
  Scratch unused_u, unused_v;
  if (!sh.vectors) {
    unused_u = Scratch(backend, device, static_cast<size_t>(sh.m * sh.k) * sizeof(T));
    unused_v = Scratch(backend, device, static_cast<size_t>(sh.n * sh.k) * sizeof(T));
  }
  for (int64_t i = 0; i < sh.batch; ++i) {
    T* ui = sh.vectors ? u->ptr<T>() + i * sh.m * sh.k : unused_u.as<T>();
    T* vi = sh.vectors ? v->ptr<T>() + i * sh.n * sh.k : unused_v.as<T>();
    gesvdj(h, args, a.ptr<T>() + i * sh.m * sh.n, s.ptr<T>() + i * sh.k, ui, vi, work.as<T>(), lwork,
           info.ptr<int>() + i, params.p);
  }
}

}  // namespace

void svd(const View& a, const View& s, const View* u, const View* v, const View& info) {
  ANVIL_NVTX_RANGE("svd");
  const shapes::SvdShape sh = shapes::check_svd(a, s, u, v, info);
  DeviceGuard guard(a.device_index);
  if (sh.batch == 0) return;
  if (sh.k == 0) {
    ANVIL_CUDA_CHECK(
        cudaMemsetAsync(info.data, 0, static_cast<size_t>(sh.batch) * sizeof(int), stream(a.device_index)));
    return;
  }
  if (a.dtype == kFloat32)
    svd_batch<float>(cuda_runtime(), a, s, u, v, info, sh);
  else
    svd_batch<double>(cuda_runtime(), a, s, u, v, info, sh);
}

ANVIL_REGISTER_KERNEL(kernel::Svd, CUDA, svd);

}  // namespace anvil::cuda
