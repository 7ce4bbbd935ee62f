// kernel::LuFactor and lu_solve for the emulated GPU, where cuSOLVER
// (kernels/cusolver/lu.cpp) is absent: the hand-written kernels of
// kernels/cusolver/lu_kernels.cu, with the same checks and contract.
// Only the emulated build compiles this file.
#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/cusolver/lu_kernels.h"
#include "kernels/shapes/linalg_checks.h"

namespace anvil::cuda {

void lu_factor(const View& a, const View& pivots, const View& info) {
  const shapes::LuShape s = shapes::check_lu_factor(a, pivots, info);
  DeviceGuard guard(a.device_index);
  if (s.batch == 0) return;
  if (s.n == 0) {
    ANVIL_CUDA_CHECK(cudaMemsetAsync(info.data, 0, static_cast<size_t>(s.batch) * sizeof(int), stream(a.device_index)));
    return;
  }
  lu_factor_dense(a.dtype, a.data, pivots.ptr<int>(), info.ptr<int>(), s.batch, s.n, stream(a.device_index));
}

void lu_solve(const View& lu, const View& pivots, const View& b) {
  const shapes::LuShape s = shapes::check_lu_solve(lu, pivots, b);
  DeviceGuard guard(b.device_index);
  if (s.batch == 0 || s.n == 0 || s.rhs == 0) return;
  lu_solve_dense(b.dtype, lu.data, pivots.ptr<const int>(), b.data, s.batch, s.n, s.rhs, stream(b.device_index));
}

ANVIL_REGISTER_KERNEL(kernel::LuFactor, CUDA, lu_factor);
ANVIL_REGISTER_KERNEL(kernel::LuSolve, CUDA, lu_solve);

}  // namespace anvil::cuda
