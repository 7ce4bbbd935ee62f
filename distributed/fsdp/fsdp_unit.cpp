#include "distributed/fsdp/fsdp_unit.h"

#include "core/autograd/grad_mode.h"
#include "core/describe.h"
#include "core/factory.h"

namespace anvil::distributed {
namespace {

// PyTorch's storage.resize_(0): the memory goes back to the allocator while
// every tensor that shares this Storage object (views autograd saved) keeps
// pointing at it, to see new memory once refill_storage runs.
void release_storage(Storage& s) {
  if (s.release && s.data) s.release(s.data);
  s.data = nullptr;
  s.nbytes = 0;
}

void refill_storage(Storage& s, size_t nbytes) {
  std::shared_ptr<Storage> fresh = Storage::allocate(nbytes, s.device);
  std::swap(s.data, fresh->data);
  std::swap(s.nbytes, fresh->nbytes);
  std::swap(s.release, fresh->release);
  // `fresh` now holds the old, empty pointer and releases nothing.
}

Tensor empty_like_dtype(const Tensor& like, DType dtype, int64_t numel) {
  return empty({numel}, TensorOptions().dtype(dtype).device(like.device()));
}

}  // namespace

FsdpUnit::FsdpUnit(std::string name, std::shared_ptr<nn::Module> module, ProcessGroup& group, DType compute_dtype)
    : name_(std::move(name)), module_(std::move(module)), group_(group), compute_dtype_(compute_dtype) {
  const char* what = "FullyShardedDataParallel";
  for (auto& [pname, p] : module_->named_parameters()) {
    ANVIL_CHECK(p.is_leaf(), what, ": parameter '", name_, ".", pname, "' is not a leaf tensor");
    if (!params_.empty())
      ANVIL_CHECK(p.dtype() == params_.front().dtype() && p.device() == params_.front().device(), what,
                  ": every parameter of unit '", name_, "' must share one dtype and device; got ",
                  detail::describe(params_.front()), " and ", detail::describe(p), " ('", pname, "')");
    params_.push_back(p);
    param_names_.push_back(pname);
  }
  ANVIL_CHECK(!params_.empty(), what, ": unit '", name_, "' has no parameters");
  ANVIL_CHECK(is_floating(params_.front().dtype()) && is_floating(compute_dtype), what,
              ": parameters and param_dtype must be floating point; got ", detail::describe(params_.front()),
              " and param_dtype ", dtype_name(compute_dtype));
  layout_ = FlatShardLayout(params_, group_.size(), what);

  NoGradGuard no_grad;
  Tensor flat = empty({layout_.padded_numel()}, params_.front().options());
  layout_.flatten_into(params_, flat);
  shard_ = flat.narrow(0, layout_.shard_begin(group_.rank()), layout_.shard_size()).clone().requires_grad_();
  full_flat_ = empty_like_dtype(shard_, compute_dtype_, layout_.padded_numel());
  full_flat_version_ = full_flat_.version();
  free_full_params();
  ready_.assign(params_.size(), false);
}

void FsdpUnit::start_gather() {
  if (gather_work_) return;
  if (gathered_ && gathered_shard_version_ == shard_.version()) return;
  NoGradGuard no_grad;
  Storage& storage = *full_flat_.storage();
  if (!storage.data) refill_storage(storage, full_flat_.nbytes());
  gather_input_ = shard_.dtype() == compute_dtype_ ? shard_.detach() : shard_.detach().to(compute_dtype_);
  gathering_shard_version_ = shard_.version();
  if (group_.size() == 1) {
    full_flat_.copy_(gather_input_);
    gather_work_ = completed_work();
  } else {
    gather_work_ = group_.all_gather(full_flat_, gather_input_);
  }
}

void FsdpUnit::wait_gather() {
  start_gather();
  if (gather_work_) {
    WorkHandle work = std::move(gather_work_);
    gather_work_ = nullptr;
    work->wait();
    gather_input_ = Tensor();
    // The gather wrote the values autograd's saved tensors were made from;
    // it is not an in-place change they must be protected from.
    full_flat_.storage()->version.store(full_flat_version_);
    gathered_ = true;
    gathered_shard_version_ = gathering_shard_version_;
  }
  point_params_at_gathered();
}

void FsdpUnit::point_params_at_gathered() {
  std::vector<Tensor> views = layout_.views_of(full_flat_);
  for (size_t i = 0; i < params_.size(); ++i) nn::set_data(params_[i], views[i]);
}

void FsdpUnit::free_full_params() {
  if (gather_work_) wait_gather();  // never free memory a transfer still writes
  release_storage(*full_flat_.storage());
  gathered_ = false;
  // Empty, so a forward that bypasses FSDP fails on shapes instead of reading freed memory.
  for (Tensor& p : params_) nn::set_data(p, empty_like_dtype(shard_, compute_dtype_, 0));
}

void FsdpUnit::mark_grad_ready(size_t param_index) {
  if (ready_[param_index]) return;
  ready_[param_index] = true;
  ++ready_count_;
}

void FsdpUnit::start_grad_reduce() {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params_.size(); ++i) grads.push_back(ready_[i] ? params_[i].grad() : Tensor());
  grad_flat_ = empty_like_dtype(shard_, compute_dtype_, layout_.padded_numel());
  layout_.flatten_into(grads, grad_flat_);
  for (Tensor& p : params_) p.set_grad(Tensor());  // the full gradients are done with
  grad_slice_ = empty_like_dtype(shard_, compute_dtype_, layout_.shard_size());
  if (group_.size() == 1) {
    grad_slice_.copy_(grad_flat_);
    reduce_work_ = completed_work();
  } else {
    reduce_work_ = group_.reduce_scatter(grad_slice_, grad_flat_, ReduceOp::Sum);
  }
  ready_.assign(params_.size(), false);
  ready_count_ = 0;
}

void FsdpUnit::finish_grad_reduce() {
  if (!grad_flat_.defined()) return;
  WorkHandle work = std::move(reduce_work_);
  reduce_work_ = nullptr;
  work->wait();
  NoGradGuard no_grad;
  // The mean over ranks, divided in the master dtype (exact for fp32 masters of bf16 gradients).
  Tensor mean = grad_slice_.to(shard_.dtype()).clone();
  mean.div_(Scalar(static_cast<int64_t>(group_.size())));
  Tensor g = shard_.grad();
  if (g.defined()) {
    g.add_(mean);
  } else {
    shard_.set_grad(mean);
  }
  grad_flat_ = Tensor();
  grad_slice_ = Tensor();
}

int64_t FsdpUnit::gathered_bytes() const {
  return full_flat_.storage()->data ? static_cast<int64_t>(full_flat_.storage()->nbytes) : 0;
}

int64_t FsdpUnit::full_param_bytes() const { return static_cast<int64_t>(full_flat_.nbytes()); }

int64_t FsdpUnit::full_grad_bytes() const {
  int64_t bytes = grad_flat_.defined() ? static_cast<int64_t>(grad_flat_.nbytes()) : 0;
  for (const Tensor& p : params_)
    if (Tensor g = p.grad(); g.defined()) bytes += static_cast<int64_t>(g.nbytes());
  return bytes;
}

std::vector<Tensor> FsdpUnit::gather_master_params() const {
  NoGradGuard no_grad;
  Tensor flat = empty({layout_.padded_numel()}, shard_.options());
  if (group_.size() == 1) {
    flat.copy_(shard_.detach());
  } else {
    group_.all_gather(flat, shard_.detach())->wait();
  }
  std::vector<Tensor> out;
  for (const Tensor& v : layout_.views_of(flat)) out.push_back(v.clone());
  return out;
}

}  // namespace anvil::distributed
