#pragma once
// Joining and splitting tensors. (Views themselves are Tensor methods.)
#include <vector>

#include "core/tensor.h"

namespace anvil {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, int64_t start = 0, int64_t end = -1);

// Helpers shared by ops: wrap a possibly negative dim, or fail naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
int64_t numel_of(const Shape& shape);

}  // namespace anvil
