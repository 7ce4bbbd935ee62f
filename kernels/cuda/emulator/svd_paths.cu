// kernel::Svd for the emulated GPU, where cuSOLVER (kernels/cusolver/
// svd.cpp) is absent: the hand-written one-sided Jacobi of
// kernels/cusolver/svd_kernels.cu, with the same checks and contract.
// Only the emulated build compiles this file.
#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/cusolver/svd_kernels.h"
#include "kernels/shapes/linalg_checks.h"

namespace anvil::cuda {

void svd(const View& a, const View& s, const View* u, const View* v, const View& info) {
  const shapes::SvdShape sh = shapes::check_svd(a, s, u, v, info);
  DeviceGuard guard(a.device_index);
  if (sh.batch == 0) return;
  if (sh.k == 0) {
    ANVIL_CUDA_CHECK(
        cudaMemsetAsync(info.data, 0, static_cast<size_t>(sh.batch) * sizeof(int), stream(a.device_index)));
    return;
  }
  svd_jacobi(a.dtype, a.data, s.data, sh.vectors ? u->data : nullptr, sh.vectors ? v->data : nullptr, info.ptr<int>(),
             sh.batch, sh.m, sh.n, stream(a.device_index));
}

ANVIL_REGISTER_KERNEL(kernel::Svd, CUDA, svd);

}  // namespace anvil::cuda
