// The indexing ops as Tensor methods (libtorch's spellings); the free
// functions are in core/ops/indexing.h and core/ops/tensor_index.h.
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/ops/indexing.h"
#include "core/ops/tensor_index.h"

namespace anvil {

using indexing::TensorIndex;

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const { return anvil::index(*this, indices); }
Tensor Tensor::index(const std::vector<TensorIndex>& indices) const { return anvil::index(*this, indices); }
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& values, bool accumulate) {
  return anvil::index_put_(*this, indices, values, accumulate);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) {
  return anvil::index_put_(*this, indices, value);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  return anvil::index_put_(*this, indices, values, accumulate);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value) {
  return anvil::index_put_(*this, indices, value);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return anvil::index_select(*this, dim, index); }
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return anvil::index_add(*this, dim, index, src);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return anvil::gather(*this, dim, index); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return anvil::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return anvil::scatter(*this, dim, index, value);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) const {
  return anvil::scatter(*this, dim, index, src, reduce);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) const {
  return anvil::scatter(*this, dim, index, value, reduce);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return anvil::scatter_(*this, dim, index, src, reduce);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  return anvil::scatter_(*this, dim, index, value, reduce);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return anvil::scatter_add(*this, dim, index, src);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return anvil::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return anvil::masked_scatter(*this, mask, source);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) {
  const char* op = "masked_scatter_";
  Tensor r = anvil::masked_scatter(*this, mask, source);
  ANVIL_CHECK(r.shape() == shape(), op, ": mask ", detail::describe(mask), " must broadcast to self ",
              detail::describe(*this));
  if (autograd::needs_grad({*this, source})) {
    autograd::rebase_history(op, *this, r);
  } else {
    autograd::check_inplace(op, *this);
    detail::runtime_of(*this).copy(view_of(), r.view_of());
    bump_version();
  }
  return *this;
}
Tensor Tensor::nonzero() const { return anvil::nonzero(*this); }
Tensor Tensor::argwhere() const { return anvil::argwhere(*this); }
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return anvil::take_along_dim(*this, indices, dim);
}

}  // namespace anvil
