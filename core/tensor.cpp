// Tensor metadata, storage, host access and conversions. Views live in
// core/ops/view.cpp, printing in core/print.cpp.
#include "core/tensor.h"

#include <cstring>
#include <sstream>

#include "core/autograd/engine.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape.h"
#include "kernels/runtime.h"

namespace anvil {

TensorImpl::TensorImpl() = default;
TensorImpl::~TensorImpl() = default;

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  Runtime& be = runtime_for(device);
  ANVIL_CHECK(device.index >= 0 && device.index < be.device_count(), "allocate: device ", device, " does not exist (",
              be.device_count(), " device(s) of that type)");
  Allocator* alloc = &be.allocator(device.index);
  void* p = alloc->allocate(nbytes, be.current_stream(device.index).id);
  return std::make_shared<Storage>(p, nbytes, device, [alloc](void* q) { alloc->deallocate(q); });
}

Tensor make_tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor alias_with(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  return make_tensor(base.storage(), std::move(shape), std::move(strides), offset, base.dtype());
}

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }
int64_t Tensor::numel() const { return numel_of(shape()); }
bool Tensor::is_contiguous() const { return view_of().is_contiguous(); }

std::string Tensor::shape_str() const {
  std::ostringstream os;
  detail::append(os, shape());
  return os.str();
}

void* Tensor::data_ptr() const {
  const TensorImpl& t = checked();
  return static_cast<char*>(t.storage->data) + t.offset * static_cast<int64_t>(anvil::itemsize(t.dtype));
}

View Tensor::view_of() const {
  const TensorImpl& t = checked();
  return View{data_ptr(), t.dtype, t.shape, t.strides, device().index};
}

Scalar Tensor::item() const {
  ANVIL_CHECK(numel() == 1, "item: expected a tensor with one element, got shape ", shape_str());
  Tensor host = contiguous().to(Device::cpu());
  return visit_dtype(dtype(), [&](auto zero) -> Scalar {
    using T = decltype(zero);
    return Scalar(*static_cast<const T*>(host.data_ptr()));
  });
}

template <typename T> std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).to(dtype_of<T>::value).contiguous();
  const T* p = static_cast<const T*>(host.data_ptr());
  return std::vector<T>(p, p + host.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<Half> Tensor::to_vector<Half>() const;
template std::vector<BFloat16> Tensor::to_vector<BFloat16>() const;

// --- copies ---

namespace {

// Copies src into dst (same shape), across devices through host memory.
// non_blocking lets a host<->device transfer finish after return (the
// backend honours it only for pinned host memory).
void copy_data(const Tensor& dst, const Tensor& src, bool non_blocking = false) {
  if (dst.numel() == 0) return;
  if (dst.device() == src.device()) {
    detail::runtime_of(dst).copy(dst.view_of(), src.view_of());
    return;
  }
  // Different devices: make the bytes contiguous in dst's dtype on the source
  // device, move them in one transfer, then scatter into dst's layout. A
  // source already in that form is sent as is (for a pinned source that is
  // what makes the transfer asynchronous).
  Tensor packed = src;
  if (!src.is_contiguous() || src.dtype() != dst.dtype()) {
    packed = empty(src.shape(), TensorOptions().dtype(dst.dtype()).device(src.device()));
    detail::runtime_of(src).copy(packed.view_of(), src.view_of());
  }
  Tensor landing = dst.is_contiguous() ? dst : empty(dst.shape(), dst.options());
  size_t nbytes = landing.nbytes();
  if (src.device().is_cpu()) {
    runtime_for(dst.device())
        .copy_from_host(landing.data_ptr(), packed.data_ptr(), nbytes, dst.device().index, non_blocking);
  } else if (dst.device().is_cpu()) {
    // Into a temporary landing buffer the host reads right below: must be complete.
    runtime_for(src.device())
        .copy_to_host(landing.data_ptr(), packed.data_ptr(), nbytes, src.device().index,
                      non_blocking && landing.same(dst));
  } else {  // device to device of another index: bounce through the host
    Tensor host = packed.to(Device::cpu());
    runtime_for(dst.device()).copy_from_host(landing.data_ptr(), host.data_ptr(), nbytes, dst.device().index, false);
  }
  if (!landing.same(dst)) detail::runtime_of(dst).copy(dst.view_of(), landing.view_of());
}

}  // namespace

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), options());
  copy_data(out, *this);
  if (autograd::needs_grad({*this}))
    autograd::record("clone", {*this}, out, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor Tensor::to(Device device, bool non_blocking) const {
  if (device == this->device()) return *this;
  Tensor out = empty(shape(), options().device(device));
  copy_data(out, *this, non_blocking);
  if (autograd::needs_grad({*this})) {
    Device from = this->device();
    autograd::record("to_device", {*this}, out, [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
  }
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  Tensor out = empty(shape(), options().dtype(dtype));
  copy_data(out, *this);
  if (autograd::needs_grad({*this}) && is_floating(dtype)) {
    DType from = this->dtype();
    autograd::record("cast", {*this}, out, [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
  }
  return out;
}

Tensor Tensor::to(const TensorOptions& options, bool non_blocking) const {
  // Move first, cast on arrival: a GPU casts faster than the host, and
  // uploading uint8 images before making them float moves a quarter of the bytes.
  return to(options.device_, non_blocking).to(options.dtype_);
}

// --- pinned memory and streams ---

Tensor Tensor::pin_memory() const {
  ANVIL_CHECK(device().is_cpu(), "pin_memory: only CPU tensors can be pinned; this tensor is on ", device());
  if (is_pinned()) return *this;
  ANVIL_CHECK(has_runtime(DeviceType::CUDA),
              "pin_memory: pinned (page-locked) host memory comes from the CUDA driver, and no CUDA backend "
              "is available (no usable GPU, or anvil was built without CUDA). Pinning only speeds up copies "
              "to a GPU: skip it when anvil::cuda::is_available() is false");
  Allocator* pinned = runtime_for(DeviceType::CUDA).pinned_host_allocator();
  ANVIL_CHECK(pinned != nullptr, "pin_memory: the CUDA backend has no pinned host allocator");
  const size_t n = nbytes();
  void* p = pinned->allocate(n);
  auto storage = std::make_shared<Storage>(p, n, Device::cpu(), [pinned](void* q) { pinned->deallocate(q); });
  storage->pinned = true;
  Tensor out = make_tensor(std::move(storage), shape(), contiguous_strides(shape()), 0, dtype());
  copy_data(out, *this);
  if (autograd::needs_grad({*this}))
    autograd::record("pin_memory", {*this}, out, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return out;
}

bool Tensor::is_pinned() const { return device().is_cpu() && storage()->pinned; }

void Tensor::record_stream(const Stream& stream) const {
  ANVIL_CHECK(device().is_cuda(), "record_stream: only CUDA tensors belong to streams; this tensor is on ", device());
  ANVIL_CHECK(stream.device == device(), "record_stream: the stream is on ", stream.device, " but the tensor is on ",
              device());
  runtime_for(device()).allocator(device().index).record_stream(storage()->data, stream.id);
}

Tensor& Tensor::copy_(const Tensor& src) {
  detail::check_defined("copy_", src, "src");
  Shape target = broadcast_shapes(shape(), src.shape(), "copy_");
  ANVIL_CHECK(target == shape(), "copy_: cannot broadcast source of shape ", src.shape_str(), " to destination shape ",
              shape_str());
  if (autograd::needs_grad({*this, src})) {
    // Out-of-place equivalent: the source broadcast and cast to our dtype.
    Tensor result = src.to(dtype()).to(device()).expand(shape()).clone();
    autograd::rebase_history("copy_", *this, result);
    return *this;
  }
  Tensor source = src.expand(shape());
  // A source overlapping the destination in another layout (a shifted slice)
  // would be read after parts of it were overwritten.
  if (detail::overlaps_unsafely(*this, source)) source = source.detach().clone();
  copy_data(*this, source);
  bump_version();
  return *this;
}

// --- autograd accessors ---

bool Tensor::requires_grad() const {
  auto* m = autograd::meta_if(*this);
  return m && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool on) {
  ANVIL_CHECK(!on || is_floating(dtype()), "requires_grad_: only floating tensors can require grad, got ",
              detail::describe(*this));
  auto& m = autograd::meta(*this);
  ANVIL_CHECK(m.grad_fn == nullptr || on,
              "requires_grad_: cannot turn off requires_grad on a non-leaf tensor "
              "(use detach())");
  m.requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const {
  auto* m = autograd::meta_if(*this);
  return !m || m->grad_fn == nullptr;
}

Tensor Tensor::grad() const {
  auto* m = autograd::meta_if(*this);
  return m ? m->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  if (g.defined())
    ANVIL_CHECK(g.shape() == shape() && g.device() == device(), "set_grad: gradient ", detail::describe(g),
                " does not match tensor ", detail::describe(*this));
  autograd::meta(*this).grad = g;
}

Tensor Tensor::detach() const { return alias_with(*this, shape(), strides(), offset()); }

Tensor& Tensor::detach_() {
  if (auto* m = autograd::meta_if(*this)) {
    m->grad_fn = nullptr;
    m->requires_grad = false;
  }
  return *this;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  auto* m = autograd::meta_if(*this);
  return m ? m->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  std::vector<Tensor> grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, {retain_graph, create_graph});
}

void Tensor::retain_grad() const {
  ANVIL_CHECK(requires_grad(), "retain_grad: tensor does not require grad");
  if (is_leaf()) return;  // leaves keep their grad anyway
  auto& m = autograd::meta(*this);
  if (m.retains_grad) return;
  m.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_;
  m.grad_fn->pre_hooks[m.output_nr].push_back([weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      auto& mm = autograd::meta(Tensor(impl));
      mm.grad = mm.grad.defined() ? mm.grad.detach() + g.detach() : g.detach().clone();
    }
    return Tensor();
  });
}

void Tensor::register_hook(TensorHook hook) const {
  ANVIL_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that does not require grad");
  auto& m = autograd::meta(*this);
  if (m.grad_fn)
    m.grad_fn->pre_hooks[m.output_nr].push_back(std::move(hook));
  else
    m.hooks.push_back(std::move(hook));
}

void Tensor::register_post_accumulate_grad_hook(PostAccumulateHook hook) const {
  ANVIL_CHECK(requires_grad() && is_leaf(),
              "register_post_accumulate_grad_hook: only leaf tensors that require "
              "grad accumulate gradients");
  autograd::meta(*this).post_accumulate_hooks.push_back(std::move(hook));
}

}  // namespace anvil
