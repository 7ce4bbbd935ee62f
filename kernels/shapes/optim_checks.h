#pragma once
// The optimizer updates' argument checks (adamw/adam, sgd), shared by the
// backends so both reject the same calls with the same messages.
#include <initializer_list>
#include <span>
#include "kernels/view.h"

namespace anvil::shapes {

// Every list in `others` has one entry per parameter.
void check_optimizer_lists(const char* op, std::span<const View> params,
                           std::initializer_list<std::span<const View>> others);
// param is float32/float64 and contiguous; `other` (named `what`) matches it
// in dtype and element count and is contiguous too.
void check_optimizer_tensor(const char* op, const View& param, const View& other, const char* what);

}  // namespace anvil::shapes
