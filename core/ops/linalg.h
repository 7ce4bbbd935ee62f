#pragma once
#include "core/tensor.h"

namespace anvil {

// PyTorch's matmul: 1-D x 1-D dot, 2-D x 2-D, and batched with broadcast
// batch dims; 1-D operands are promoted and the added dim removed.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // 2-D only
Tensor bmm(const Tensor& a, const Tensor& b);  // 3-D only, equal batch
Tensor dot(const Tensor& a, const Tensor& b);  // 1-D only

}  // namespace anvil
