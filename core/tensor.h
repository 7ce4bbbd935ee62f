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

/// What a Tensor handle points to: storage, geometry, dtype and autograd state. Shared by every copy of the handle.
struct TensorImpl {
  std::shared_ptr<Storage> storage;  ///< the memory, shared by views
  Shape shape;  ///< sizes, one per dim
  Shape strides;  ///< in elements
  int64_t offset = 0;  ///< in elements
  DType dtype = kFloat32;  ///< the element type
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
/// Called with a leaf's gradient once it has been accumulated into .grad().
using PostAccumulateHook = std::function<void(const Tensor&)>;

/// A cheap, shared handle to an n-dimensional array on the CPU or a GPU, with autograd; copies share the data.
class Tensor {
 public:
  Tensor() = default;
  /// Wraps an implementation (make_tensor and alias_with build one).
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }  ///< False for a default-constructed (or moved-from) tensor.
  TensorImpl* impl() const { return impl_.get(); }  ///< The implementation (null when undefined).
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }  ///< The implementation's shared pointer.
  /// Whether both handles point to the same tensor (not just equal values).
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

  // --- metadata ---
  const Shape& shape() const { return checked().shape; }  ///< Sizes, one per dim.
  const Shape& strides() const { return checked().strides; }  ///< Strides in elements, one per dim.
  int64_t size(int64_t dim) const;  ///< negative dims count from the end
  int64_t stride(int64_t dim) const;  ///< The stride of `dim` in elements; negative dims count from the end.
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }  ///< Number of dims (0 for a scalar tensor).
  int64_t numel() const;  ///< Number of elements.
  int64_t offset() const { return checked().offset; }  ///< Offset of the first element into the storage, in elements.
  DType dtype() const { return checked().dtype; }  ///< The element type.
  Device device() const { return checked().storage->device; }  ///< Where the data lives.
  size_t itemsize() const { return anvil::itemsize(dtype()); }  ///< Bytes per element.
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }  ///< numel() * itemsize().
  bool is_contiguous() const;  ///< Whether the strides are row-major contiguous.
  /// Whether the dtype is float32, float64, float16 or bfloat16.
  bool is_floating_point() const { return is_floating(dtype()); }
  std::string shape_str() const;  ///< "[2, 3]"
  /// This tensor's dtype and device as TensorOptions (for a factory call like zeros(shape, x.options())).
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  /// The same metadata as libtorch spells it.
  const Shape& sizes() const { return shape(); }
  DType scalar_type() const { return dtype(); }  ///< libtorch's name for dtype().
  bool is_cpu() const { return device().is_cpu(); }  ///< Whether the data is on the CPU.
  bool is_cuda() const { return device().is_cuda(); }  ///< Whether the data is on a GPU.
  int64_t element_size() const { return static_cast<int64_t>(itemsize()); }  ///< libtorch's name for itemsize().

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
  /// The storage, shared by every view of it.
  const std::shared_ptr<Storage>& storage() const { return checked().storage; }
  /// The storage's version counter: bumped by every in-place write, checked by autograd.
  uint64_t version() const { return storage()->version.load(); }
  /// Marks an in-place write (ops that write in place call it).
  void bump_version() const { storage()->version.fetch_add(1); }

  // --- values on the host (synchronizes with the device) ---
  Scalar item() const;  ///< The value of a one-element tensor (copied to the host).
  template <typename T> T item() const { return item().to<T>(); }  ///< The value of a one-element tensor, as T.
  template <typename T> std::vector<T> to_vector() const;  ///< any dtype, cast to T

  // --- views: share storage; recorded by autograd ---
  Tensor view(const Shape& shape) const;  ///< one dim may be -1
  Tensor reshape(const Shape& shape) const;  ///< a view when possible, else a copy
  Tensor transpose(int64_t d0, int64_t d1) const;  ///< A view with dims d0 and d1 swapped.
  Tensor t() const;  ///< 2-D: transpose(0, 1); 0-D and 1-D: an alias of self (as in PyTorch)
  /// A view with the dims reordered: dim i of the result is dims[i] of this one.
  Tensor permute(const Shape& dims) const;
  Tensor squeeze() const;  ///< A view without its size-1 dims.
  Tensor squeeze(int64_t dim) const;  ///< A view without `dim` when its size is 1 (else the same shape).
  Tensor unsqueeze(int64_t dim) const;  ///< A view with a size-1 dim inserted at `dim`.
  /// Dims start..end merged into one (a view when possible, else a copy).
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor expand(const Shape& shape) const;  ///< -1 keeps a size
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }  ///< expand(other.shape()).
  Tensor view_as(const Tensor& other) const { return view(other.shape()); }  ///< view(other.shape()).
  Tensor reshape_as(const Tensor& other) const { return reshape(other.shape()); }  ///< reshape(other.shape()).
  /// A view of `length` indices of `dim` from `start`.
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// A view of indices start, start + step, ... below end along `dim` (negative ends count from the end).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  ///< A view of index `index` along `dim`, without that dim.
  Tensor operator[](int64_t index) const { return select(0, index); }  ///< select(0, index), as x[i] in libtorch.
  Tensor contiguous() const;  ///< self when already contiguous

  // --- copies and conversions ---
  Tensor clone() const;  ///< A copy with its own storage (differentiable: the gradient flows back to this tensor).
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
  Tensor cpu() const { return to(Device::cpu()); }  ///< A copy on the CPU (self when already there).
  /// A copy on CUDA device `index` (self when already there).
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
  bool requires_grad() const;  ///< Whether autograd records ops on this tensor.
  Tensor& requires_grad_(bool enabled = true);  ///< `requires` is a C++20 keyword
  /// Whether this tensor was created by the user rather than by a recorded op (its gradient lands in grad()).
  bool is_leaf() const;
  Tensor grad() const;  ///< The accumulated gradient (undefined until a backward reaches this leaf).
  void set_grad(const Tensor& g) const;  ///< Sets (or with an undefined tensor, clears) the accumulated gradient.
  Tensor detach() const;  ///< same data, no history
  Tensor& detach_();  ///< Detaches this tensor in place from the graph that made it.
  /// The node that made this tensor (null for leaves and tensors that need no grad).
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// Backpropagates from this tensor: accumulates d(this)/d(leaf) into each leaf's grad(); `gradient` defaults to 1 for
  /// a scalar.
  void backward(const Tensor& gradient = {}, bool retain_graph = false, bool create_graph = false) const;
  void retain_grad() const;  ///< Keeps grad() for this non-leaf tensor too.
  /// Called with the gradient w.r.t. this tensor; a defined return value replaces it.
  void register_hook(TensorHook hook) const;
  /// Leaf only: called after the gradient was accumulated into .grad().
  void register_post_accumulate_grad_hook(PostAccumulateHook hook) const;

  // --- common ops as methods (defined with the free functions in core/ops) ---
  /// A dim is given as a Shape of dims or as one integer (x.sum(1)): see DimIndex.
  Tensor neg() const;
  Tensor abs() const;  ///< abs(*this).
  Tensor exp() const;  ///< exp(*this).
  Tensor log() const;  ///< log(*this).
  Tensor sqrt() const;  ///< sqrt(*this).
  Tensor rsqrt() const;  ///< rsqrt(*this).
  Tensor sin() const;  ///< sin(*this).
  Tensor cos() const;  ///< cos(*this).
  Tensor tanh() const;  ///< tanh(*this).
  Tensor sigmoid() const;  ///< sigmoid(*this).
  Tensor relu() const;  ///< relu(*this).
  Tensor square() const;  ///< square(*this).
  Tensor pow(const Scalar& e) const;  ///< pow(*this, e).
  /// An absent bound ({} or std::nullopt) leaves that side open, as in libtorch.
  Tensor clamp(std::optional<double> lo, std::optional<double> hi = std::nullopt) const;
  Tensor clamp_min(double lo) const { return clamp(lo); }  ///< clamp(lo, none).
  Tensor clamp_max(double hi) const { return clamp(std::nullopt, hi); }  ///< clamp(none, hi).
  /// self + alpha * other and self - alpha * other.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;  ///< sub(*this, other, alpha).
  Tensor add(const Scalar& other) const;  ///< add(*this, other).
  Tensor sub(const Scalar& other) const;  ///< sub(*this, other).
  Tensor mul(const Tensor& other) const;  ///< mul(*this, other).
  Tensor mul(const Scalar& other) const;  ///< mul(*this, other).
  Tensor div(const Tensor& other) const;  ///< div(*this, other).
  Tensor div(const Scalar& other) const;  ///< div(*this, other).
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;  ///< masked_fill(*this, mask, value).

  Tensor sum() const;  ///< Sum of every element, 0-d.
  Tensor sum(const Shape& dims, bool keepdim = false) const;  ///< Sum over `dims`.
  Tensor mean() const;  ///< Mean of every element, 0-d.
  Tensor mean(const Shape& dims, bool keepdim = false) const;  ///< Mean over `dims`.
  Tensor prod() const;  ///< Product of every element, 0-d.
  Tensor prod(const Shape& dims, bool keepdim = false) const;  ///< Product over `dims`.
  /// correction 1 is the unbiased estimate (libtorch's unbiased = true), 0 the biased one.
  Tensor var(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  /// Standard deviation over `dims` (every dim when empty), with the same correction as var().
  Tensor std(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  /// The p-norm over `dims` (every dim when empty).
  Tensor norm(double p = 2.0, const Shape& dims = {}, bool keepdim = false) const;
  /// Sum over one dim.
  template <DimIndex I> Tensor sum(I dim, bool keepdim = false) const { return sum(Shape{int64_t(dim)}, keepdim); }
  /// Mean over one dim.
  template <DimIndex I> Tensor mean(I dim, bool keepdim = false) const { return mean(Shape{int64_t(dim)}, keepdim); }
  /// Product over one dim.
  template <DimIndex I> Tensor prod(I dim, bool keepdim = false) const { return prod(Shape{int64_t(dim)}, keepdim); }
  /// Variance over one dim.
  template <DimIndex I> Tensor var(I dim, int64_t correction = 1, bool keepdim = false) const {
    return var(Shape{int64_t(dim)}, correction, keepdim);
  }
  /// Standard deviation over one dim.
  template <DimIndex I> Tensor std(I dim, int64_t correction = 1, bool keepdim = false) const {
    return std(Shape{int64_t(dim)}, correction, keepdim);
  }
  /// The p-norm over one dim.
  template <DimIndex I> Tensor norm(double p, I dim, bool keepdim = false) const {
    return norm(p, Shape{int64_t(dim)}, keepdim);
  }
  Tensor max() const;  ///< Largest element, 0-d.
  Tensor min() const;  ///< Smallest element, 0-d.
  /// Along one dim: values and int64 indices, as std::get<0>(x.max(1)) or auto [values, indices] = x.max(1).
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  /// Smallest values along `dim`, and their int64 indices.
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;  ///< Index of the largest element in the flattened tensor, int64 0-d.
  Tensor argmax(int64_t dim, bool keepdim = false) const;  ///< Indices of the largest values along `dim`.
  Tensor argmin() const;  ///< Index of the smallest element in the flattened tensor, int64 0-d.
  Tensor argmin(int64_t dim, bool keepdim = false) const;  ///< Indices of the smallest values along `dim`.
  Tensor softmax(int64_t dim) const;  ///< softmax(*this, dim).
  Tensor log_softmax(int64_t dim) const;  ///< log_softmax(*this, dim).
  Tensor matmul(const Tensor& o) const;  ///< matmul(*this, o).

  /// Copies rearranging the elements (core/ops/shape.h), differentiable.
  Tensor repeat(const Shape& repeats) const;
  Tensor flip(const Shape& dims) const;  ///< flip(*this, dims).
  template <DimIndex I> Tensor flip(I dim) const { return flip(Shape{int64_t(dim)}); }  ///< flip(*this, dim).
  Tensor roll(const Shape& shifts, const Shape& dims = {}) const;  ///< roll(*this, shifts, dims).
  /// roll(*this, shift): the flattened tensor rolled, shape kept.
  template <DimIndex I> Tensor roll(I shift) const { return roll(Shape{int64_t(shift)}); }
  /// roll(*this, shift, dim).
  template <DimIndex I, DimIndex J> Tensor roll(I shift, J dim) const {
    return roll(Shape{int64_t(shift)}, Shape{int64_t(dim)});
  }
  std::vector<Tensor> unbind(int64_t dim = 0) const;  ///< views, one per index of dim

  /// More elementwise, scan, sort, logical and triangular ops as methods
  /// (core/ops/elementwise.h, scan.h, sort.h, reduce.h, creation.h).
  Tensor log1p() const;
  Tensor expm1() const;  ///< expm1(*this).
  Tensor erf() const;  ///< erf(*this).
  Tensor erfinv() const;  ///< erfinv(*this).
  Tensor atan() const;  ///< atan(*this).
  Tensor log2() const;  ///< log2(*this).
  Tensor floor() const;  ///< floor(*this).
  Tensor ceil() const;  ///< ceil(*this).
  Tensor round() const;  ///< round(*this), half to even.
  Tensor trunc() const;  ///< trunc(*this).
  Tensor isnan() const;  ///< isnan(*this).
  Tensor isinf() const;  ///< isinf(*this).
  Tensor isfinite() const;  ///< isfinite(*this).
  Tensor logical_not() const;  ///< logical_not(*this).
  Tensor bitwise_not() const;  ///< as ! and ~
  Tensor logical_and(const Tensor& o) const;  ///< logical_and(*this, o).
  Tensor logical_or(const Tensor& o) const;  ///< logical_or(*this, o).
  Tensor fmod(const Tensor& o) const;  ///< fmod(*this, o).
  Tensor fmod(const Scalar& o) const;  ///< fmod(*this, o).
  Tensor remainder(const Tensor& o) const;  ///< remainder(*this, o).
  Tensor remainder(const Scalar& o) const;  ///< remainder(*this, o).
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;  ///< cumsum(*this, dim, dtype).
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;  ///< cumprod(*this, dim, dtype).
  Tensor logcumsumexp(int64_t dim) const;  ///< logcumsumexp(*this, dim).
  /// auto [values, indices] = x.sort(-1, true); x.topk(3) gives the 3 largest along the last dim.
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  /// The indices sort(dim, descending, stable) would order by.
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  /// The k largest (or smallest) values along `dim` and their indices.
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor all() const;  ///< Whether every element is non-zero, bool 0-d.
  Tensor all(int64_t dim, bool keepdim = false) const;  ///< all() along one dim.
  Tensor any() const;  ///< Whether any element is non-zero, bool 0-d.
  Tensor any(int64_t dim, bool keepdim = false) const;  ///< any() along one dim.
  Tensor logsumexp(const Shape& dims, bool keepdim = false) const;  ///< logsumexp(*this, dims, keepdim).
  /// logsumexp over one dim.
  template <DimIndex I> Tensor logsumexp(I dim, bool keepdim = false) const {
    return logsumexp(Shape{int64_t(dim)}, keepdim);
  }
  Tensor tril(int64_t diagonal = 0) const;  ///< tril(*this, diagonal).
  Tensor triu(int64_t diagonal = 0) const;  ///< triu(*this, diagonal).

  ///@{
  /// In place (refused on leaves that require grad, as the free functions).
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& s);
  ///@}
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);  ///< self -= alpha * o.
  Tensor& mul_(const Tensor& o);  ///< self *= o.
  Tensor& mul_(const Scalar& s);  ///< self *= s.
  Tensor& div_(const Tensor& o);  ///< self /= o.
  Tensor& div_(const Scalar& s);  ///< self /= s.
  Tensor& relu_();  ///< relu in place.
  Tensor& clamp_(std::optional<double> lo, std::optional<double> hi = std::nullopt);  ///< clamp in place.
  Tensor& clamp_min_(double lo) { return clamp_(lo); }  ///< clamp_(lo, none).
  Tensor& clamp_max_(double hi) { return clamp_(std::nullopt, hi); }  ///< clamp_(none, hi).
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1);  ///< self += value * t1 * t2
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1);  ///< self += value * t1 / t2
  Tensor& lerp_(const Tensor& end, const Scalar& weight);  ///< self += weight * (end - self)
  Tensor& lerp_(const Tensor& end, const Tensor& weight);  ///< self += weight * (end - self), elementwise weight.
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);  ///< masked_fill in place.
  Tensor& zero_();  ///< Sets every element to 0.
  Tensor& fill_(const Scalar& v);  ///< Sets every element to `v`.

  ///@{
  /// Indexing as libtorch spells it (core/ops/tensor_index.h, core/ops/indexing.h):
  /// x.index({Slice(1, None, 2), 0, Ellipsis, None}), x.index({mask}), x.index_put_({idx}, v, true).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  ///@}
  /// Writes `values` (broadcast) where `indices` select, or adds them with `accumulate`; x.index_put_({mask}, v).
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                     bool accumulate = false);
  /// Writes `value` where `indices` select.
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value);
  /// index_put_ with a vector of indices.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values, bool accumulate = false);
  /// index_put_ of one value with a vector of indices.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value);
  Tensor index_select(int64_t dim, const Tensor& index) const;  ///< index_select(*this, dim, index).
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& src) const;  ///< index_add(*this, dim, index, src).
  Tensor gather(int64_t dim, const Tensor& index) const;  ///< gather(*this, dim, index).
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;  ///< scatter(*this, dim, index, src).
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;  ///< scatter(*this, dim, index, value).
  /// scatter with a reduction ("add", "multiply").
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) const;
  /// scatter of one value with a reduction.
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) const;
  /// scatter in place.
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce = "");
  /// scatter of one value in place.
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce = "");
  /// scatter_add(*this, dim, index, src).
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor masked_select(const Tensor& mask) const;  ///< masked_select(*this, mask).
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;  ///< masked_scatter(*this, mask, source).
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source);  ///< masked_scatter in place.
  Tensor nonzero() const;  ///< nonzero(*this).
  Tensor argwhere() const;  ///< argwhere(*this).
  /// take_along_dim(*this, indices, dim).
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;

 private:
  const TensorImpl& checked() const {
    ANVIL_CHECK(impl_ != nullptr, "Tensor: used an undefined tensor (default-constructed or moved-from)");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);  ///< prints like PyTorch
std::string to_string(const Tensor& t);  ///< The text operator<< prints.

/// Wraps storage in a fresh tensor (no autograd history).
Tensor make_tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);
/// Same storage, other geometry: the building block of every view.
Tensor alias_with(const Tensor& base, Shape shape, Shape strides, int64_t offset);

}  // namespace anvil
