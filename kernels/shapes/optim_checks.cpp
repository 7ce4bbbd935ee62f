#include "kernels/shapes/optim_checks.h"

#include "core/base/error.h"

namespace anvil::shapes {

void check_optimizer_lists(const char* op, std::span<const View> params,
                           std::initializer_list<std::span<const View>> others) {
  for (const auto& list : others)
    ANVIL_CHECK(list.size() == params.size(), op, ": got ", params.size(), " parameters but a list of ", list.size(),
                " state or gradient tensors");
}

void check_optimizer_tensor(const char* op, const View& param, const View& other, const char* what) {
  ANVIL_CHECK(param.dtype == kFloat32 || param.dtype == kFloat64, op, ": parameters must be float32 or float64, got ",
              param.dtype);
  ANVIL_CHECK(other.dtype == param.dtype, op, ": ", what, " dtype ", other.dtype, " differs from parameter dtype ",
              param.dtype);
  ANVIL_CHECK(other.numel() == param.numel(), op, ": ", what, " has ", other.numel(), " elements, parameter has ",
              param.numel(), " (shape ", param.shape, ")");
  ANVIL_CHECK(param.is_contiguous() && other.is_contiguous(), op, ": parameters and ", what,
              " must be contiguous (parameter shape ", param.shape, ")");
}

}  // namespace anvil::shapes
