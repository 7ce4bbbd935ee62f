#pragma once
// Helpers every op front-end uses: find the device's runtime or an op's
// kernel, check devices and dtypes with messages that name the op.
#include <initializer_list>
#include <string>

#include "core/tensor.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/attention_kernels.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/ops/index_kernels.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/ops/optim_kernels.h"
#include "kernels/ops/random_kernels.h"
#include "kernels/ops/softmax_loss_kernels.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/runtime.h"

namespace anvil::detail {

inline Runtime& runtime_of(const Tensor& t) { return runtime_for(t.device().type); }

// The kernel registered for Op on t's device type (an error naming the op
// and device when there is none); find_kernel<Op>(type) where a composed
// fallback can run instead.
template <class Op> typename Op::Signature& kernel_of(const Tensor& t) { return kernel_for<Op>(t.device().type); }

// Every defined tensor must be on the same device; names them all otherwise.
void check_same_device(const char* op, std::initializer_list<Tensor> tensors);
void check_defined(const char* op, const Tensor& t, const char* what);
void check_floating(const char* op, const Tensor& t, const char* what);
void check_dtype(const char* op, const Tensor& t, DType expected, const char* what);
void check_dim(const char* op, const Tensor& t, int64_t expected, const char* what);
// "[2, 3] float32 cpu" for error messages.
std::string describe(const Tensor& t);
// True when a kernel writing `dst` while reading `src` could read an element it
// already wrote: both touch one memory range of a storage without being the
// very same view. Such a source must be cloned first.
bool overlaps_unsafely(const Tensor& dst, const Tensor& src);

}  // namespace anvil::detail
