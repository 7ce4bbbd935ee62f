#pragma once
/// @file
/// Tensor: a cheap handle (shared pointer) to storage + shape + strides +
/// offset + dtype + device, plus autograd fields. Copying a Tensor shares the
/// data; views (view, transpose, slice, expand, ...) share storage too.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/device.h"
#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/scalar.h"
#include "core/storage.h"
#include "core/tensor_options.h"
#include "kernels/view.h"

namespace anvil {

namespace autograd {
class Node;
struct AutogradMeta;
}  // namespace autograd

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;  ///< in elements
  int64_t offset = 0;  ///< in elements
  DType dtype = kFloat32;
  /// Made by a view op (not detach): writing into it changes another tensor,
  /// which autograd has to know about (see autograd::rebase_history).
  bool is_view = false;
  std::unique_ptr<autograd::AutogradMeta> autograd;  ///< created on first need

  TensorImpl();
  ~TensorImpl();
};

class Tensor;
namespace indexing {
class TensorIndex;  // core/ops/tensor_index.h
}  // namespace indexing
using TensorHook = std::function<Tensor(const Tensor&)>;  ///< may return an undefined Tensor: keep grad
using PostAccumulateHook = std::function<void(const Tensor&)>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

  // --- metadata ---
  const Shape& shape() const { return checked().shape; }
  const Shape& strides() const { return checked().strides; }
  int64_t size(int64_t dim) const;  ///< negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;
  int64_t offset() const { return checked().offset; }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device; }
  size_t itemsize() const { return anvil::itemsize(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }
  bool is_contiguous() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  std::string shape_str() const;  ///< "[2, 3]"
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  /// The same metadata as libtorch spells it.
  const Shape& sizes() const { return shape(); }
  DType scalar_type() const { return dtype(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  int64_t element_size() const { return static_cast<int64_t>(itemsize()); }

  ///@{
  /// Raw data (device pointer for device tensors), with the offset applied.
  void* data_ptr() const;
  template <typename T> T* data() const {
    ANVIL_CHECK(dtype_of<T>::value == dtype(), "Tensor::data: tensor has dtype ", dtype(),
                " but the requested type is ", dtype_of<T>::value);
    return static_cast<T*>(data_ptr());
  }
  ///@}
  template <typename T> T* data_ptr() const { return data<T>(); }  ///< libtorch's name: checked the same way
  View view_of() const;  ///< what a kernel sees
  const std::shared_ptr<Storage>& storage() const { return checked().storage; }
  uint64_t version() const { return storage()->version.load(); }
  void bump_version() const { storage()->version.fetch_add(1); }

  // --- values on the host (synchronizes with the device) ---
  Scalar item() const;
  template <typename T> T item() const { return item().to<T>(); }
  template <typename T> std::vector<T> to_vector() const;  ///< any dtype, cast to T

  // --- views: share storage; recorded by autograd ---
  Tensor view(const Shape& shape) const;  ///< one dim may be -1
  Tensor reshape(const Shape& shape) const;  ///< a view when possible, else a copy
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  ///< 2-D: transpose(0, 1); 0-D and 1-D: an alias of self (as in PyTorch)
  Tensor permute(const Shape& dims) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor expand(const Shape& shape) const;  ///< -1 keeps a size
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor view_as(const Tensor& other) const { return view(other.shape()); }
  Tensor reshape_as(const Tensor& other) const { return reshape(other.shape()); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor contiguous() const;  ///< self when already contiguous

  // --- copies and conversions ---
  Tensor clone() const;
  ///@{
  /// non_blocking: a copy between the host and a GPU may still be running on
  /// return (on the device's current stream). It only takes effect when the
  /// host side is pinned memory (pin_memory()); otherwise the copy completes
  /// before to() returns, as with non_blocking = false.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype, bool non_blocking = false) const { return to(device, non_blocking).to(dtype); }
  ///@}
  /// Device and dtype from options (requires_grad is not applied).
  Tensor to(const TensorOptions& options, bool non_blocking = false) const;
  /// "cuda", "cpu:0": without it to("cuda") would be ambiguous between the two above.
  Tensor to(const char* device, bool non_blocking = false) const { return to(Device(device), non_blocking); }
  /// kCPU, kCUDA: both Device and TensorOptions convert from a DeviceType, so it needs its own overload too.
  Tensor to(DeviceType type, bool non_blocking = false) const { return to(Device(type), non_blocking); }
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor cuda(int index = 0) const { return to(Device::cuda(index)); }
  Tensor& copy_(const Tensor& src);  ///< broadcasts src, casts dtype, crosses devices

  // --- pinned memory and streams (CUDA) ---
  /// A copy of this CPU tensor in page-locked host memory (contiguous), so
  /// that to(cuda, non_blocking = true) can overlap with host work. Self when
  /// already pinned. Needs the CUDA backend (the driver pins the pages): raises
  /// a clear error without a usable GPU.
  Tensor pin_memory() const;
  bool is_pinned() const;  ///< CPU tensor in pinned memory
  /// This CUDA tensor's memory is also used by work queued on `stream`: when
  /// the tensor is freed, its block is not reused until that work is done.
  /// Needed when a tensor allocated on one stream is used on another.
  void record_stream(const Stream& stream) const;

  // --- autograd ---
  bool requires_grad() const;
  Tensor& requires_grad_(bool enabled = true);  ///< `requires` is a C++20 keyword
  bool is_leaf() const;
  Tensor grad() const;
  void set_grad(const Tensor& g) const;
  Tensor detach() const;  ///< same data, no history
  Tensor& detach_();
  std::shared_ptr<autograd::Node> grad_fn() const;
  void backward(const Tensor& gradient = {}, bool retain_graph = false, bool create_graph = false) const;
  void retain_grad() const;
  /// Called with the gradient w.r.t. this tensor; a defined return value replaces it.
  void register_hook(TensorHook hook) const;
  /// Leaf only: called after the gradient was accumulated into .grad().
  void register_post_accumulate_grad_hook(PostAccumulateHook hook) const;

  // --- common ops as methods (defined with the free functions in core/ops) ---
  /// A dim is given as a Shape of dims or as one integer (x.sum(1)): see DimIndex.
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor square() const;
  Tensor pow(const Scalar& e) const;
  /// An absent bound ({} or std::nullopt) leaves that side open, as in libtorch.
  Tensor clamp(std::optional<double> lo, std::optional<double> hi = std::nullopt) const;
  Tensor clamp_min(double lo) const { return clamp(lo); }
  Tensor clamp_max(double hi) const { return clamp(std::nullopt, hi); }
  /// self + alpha * other and self - alpha * other.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other) const;
  Tensor sub(const Scalar& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;

  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(const Shape& dims, bool keepdim = false) const;
  /// correction 1 is the unbiased estimate (libtorch's unbiased = true), 0 the biased one.
  Tensor var(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor norm(double p = 2.0, const Shape& dims = {}, bool keepdim = false) const;
  template <DimIndex I> Tensor sum(I dim, bool keepdim = false) const { return sum(Shape{int64_t(dim)}, keepdim); }
  template <DimIndex I> Tensor mean(I dim, bool keepdim = false) const { return mean(Shape{int64_t(dim)}, keepdim); }
  template <DimIndex I> Tensor prod(I dim, bool keepdim = false) const { return prod(Shape{int64_t(dim)}, keepdim); }
  template <DimIndex I> Tensor var(I dim, int64_t correction = 1, bool keepdim = false) const {
    return var(Shape{int64_t(dim)}, correction, keepdim);
  }
  template <DimIndex I> Tensor std(I dim, int64_t correction = 1, bool keepdim = false) const {
    return std(Shape{int64_t(dim)}, correction, keepdim);
  }
  template <DimIndex I> Tensor norm(double p, I dim, bool keepdim = false) const {
    return norm(p, Shape{int64_t(dim)}, keepdim);
  }
  Tensor max() const;
  Tensor min() const;
  /// Along one dim: values and int64 indices, as std::get<0>(x.max(1)) or auto [values, indices] = x.max(1).
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin() const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor matmul(const Tensor& o) const;

  /// Copies rearranging the elements (core/ops/shape.h), differentiable.
  Tensor repeat(const Shape& repeats) const;
  Tensor flip(const Shape& dims) const;
  template <DimIndex I> Tensor flip(I dim) const { return flip(Shape{int64_t(dim)}); }
  Tensor roll(const Shape& shifts, const Shape& dims = {}) const;
  template <DimIndex I> Tensor roll(I shift) const { return roll(Shape{int64_t(shift)}); }
  template <DimIndex I, DimIndex J> Tensor roll(I shift, J dim) const {
    return roll(Shape{int64_t(shift)}, Shape{int64_t(dim)});
  }
  std::vector<Tensor> unbind(int64_t dim = 0) const;  ///< views, one per index of dim

  /// More elementwise, scan, sort, logical and triangular ops as methods
  /// (core/ops/elementwise.h, scan.h, sort.h, reduce.h, creation.h).
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor erf() const;
  Tensor erfinv() const;
  Tensor atan() const;
  Tensor log2() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor logical_not() const;
  Tensor bitwise_not() const;  ///< as ! and ~
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor fmod(const Tensor& o) const;
  Tensor fmod(const Scalar& o) const;
  Tensor remainder(const Tensor& o) const;
  Tensor remainder(const Scalar& o) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor logcumsumexp(int64_t dim) const;
  /// auto [values, indices] = x.sort(-1, true); x.topk(3) gives the 3 largest along the last dim.
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor logsumexp(const Shape& dims, bool keepdim = false) const;
  template <DimIndex I> Tensor logsumexp(I dim, bool keepdim = false) const {
    return logsumexp(Shape{int64_t(dim)}, keepdim);
  }
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;

  ///@{
  /// In place (refused on leaves that require grad, as the free functions).
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& s);
  ///@}
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& s);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& s);
  Tensor& relu_();
  Tensor& clamp_(std::optional<double> lo, std::optional<double> hi = std::nullopt);
  Tensor& clamp_min_(double lo) { return clamp_(lo); }
  Tensor& clamp_max_(double hi) { return clamp_(std::nullopt, hi); }
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1);  ///< self += value * t1 * t2
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1);  ///< self += value * t1 / t2
  Tensor& lerp_(const Tensor& end, const Scalar& weight);  ///< self += weight * (end - self)
  Tensor& lerp_(const Tensor& end, const Tensor& weight);
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);
  Tensor& zero_();
  Tensor& fill_(const Scalar& v);

  ///@{
  /// Indexing as libtorch spells it (core/ops/tensor_index.h, core/ops/indexing.h):
  /// x.index({Slice(1, None, 2), 0, Ellipsis, None}), x.index({mask}), x.index_put_({idx}, v, true).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  ///@}
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                     bool accumulate = false);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values, bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value);
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce = "");
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce = "");
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source);
  Tensor nonzero() const;
  Tensor argwhere() const;
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;

 private:
  const TensorImpl& checked() const {
    ANVIL_CHECK(impl_ != nullptr, "Tensor: used an undefined tensor (default-constructed or moved-from)");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);  ///< prints like PyTorch
std::string to_string(const Tensor& t);

/// Wraps storage in a fresh tensor (no autograd history).
Tensor make_tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);
/// Same storage, other geometry: the building block of every view.
Tensor alias_with(const Tensor& base, Shape shape, Shape strides, int64_t offset);

}  // namespace anvil
