#pragma once
// detail::describe, for the error messages of layers above core (nn,
// distributed) without the op front-ends' dispatch helpers (core/dispatch.h,
// which declares it too, reaches the kernel runtime). Defined in
// core/dispatch.cpp.
#include <string>

#include "core/tensor.h"

namespace anvil::detail {

// "[2, 3] float32 cpu" for error messages ("undefined" for an undefined tensor).
std::string describe(const Tensor& t);

}  // namespace anvil::detail
