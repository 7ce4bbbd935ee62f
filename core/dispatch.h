#pragma once
// Helpers every op front-end uses: find the backend, check devices and
// dtypes with messages that name the op.
#include <initializer_list>
#include <string>

#include "core/tensor.h"
#include "kernels/backend.h"

namespace anvil::detail {

inline Backend& backend_of(const Tensor& t) { return backend_for(t.device().type); }

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
