#include "distributed/ddp/data_parallel.h"

#include <exception>
#include <thread>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/cuda.h"
#include "core/ops/shape.h"

namespace anvil::distributed {
namespace {

std::vector<Device> default_devices(const nn::Module& module) {
  const Device home = module.device();
  if (home.type == DeviceType::CUDA && cuda::device_count() > 1) {
    std::vector<Device> all{home};
    for (int i = 0; i < cuda::device_count(); ++i)
      if (i != home.index) all.push_back(Device::cuda(i));
    return all;
  }
  return {home};
}

// Points `target` (a replica's parameter or buffer handle) at a copy of
// `source` on `device`. With `differentiable`, target becomes a non-leaf whose
// gradient flows back into source, so backward sums every replica's gradient
// into the original parameter.
void rebind(Tensor target, const Tensor& source, Device device, bool differentiable, bool own_copy) {
  Tensor data = source.detach();
  data = data.device() == device ? (own_copy ? data.clone() : data) : data.to(device);
  nn::set_data(target, data);
  autograd::AutogradMeta& m = autograd::meta(target);
  if (differentiable) {
    const Device from = source.device();
    autograd::record("replicate", {source}, target,
                     [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
  } else {
    m.grad_fn = nullptr;
    m.requires_grad = false;
  }
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<nn::Module> module, ReplicaFactory make_replica, DataParallelOptions options)
    : nn::Module("DataParallel"), module_(std::move(module)), devices_(std::move(options.devices)) {
  ANVIL_CHECK(module_ != nullptr, "DataParallel: got a null module");
  register_module("module", module_);
  if (devices_.empty()) devices_ = default_devices(*module_);
  ANVIL_CHECK(devices_.front() == module_->device(), "DataParallel: the module is on ", module_->device().str(),
              " but the first device (which holds it and the outputs) is ", devices_.front().str());
  replicas_.push_back(module_);
  if (devices_.size() == 1) return;
  ANVIL_CHECK(make_replica != nullptr, "DataParallel: ", devices_.size(),
              " devices need a factory that builds replicas of the module");
  const nn::NamedTensors params = module_->named_parameters(), buffers = module_->named_buffers();
  for (size_t i = 1; i < devices_.size(); ++i) {
    std::shared_ptr<nn::Module> replica = make_replica();
    ANVIL_CHECK(replica != nullptr, "DataParallel: the replica factory returned null");
    const nn::NamedTensors rp = replica->named_parameters(), rb = replica->named_buffers();
    ANVIL_CHECK(rp.size() == params.size() && rb.size() == buffers.size(), "DataParallel: the replica has ", rp.size(),
                " parameters and ", rb.size(), " buffers but the module ", params.size(), " and ", buffers.size(),
                "; the factory must build the same architecture");
    for (size_t k = 0; k < params.size(); ++k)
      ANVIL_CHECK(rp[k].first == params[k].first && rp[k].second.shape() == params[k].second.shape(),
                  "DataParallel: replica parameter '", rp[k].first, "' ", rp[k].second.shape_str(),
                  " does not match the module's '", params[k].first, "' ", params[k].second.shape_str());
    replica->to(devices_[i], params.empty() ? kFloat32 : params.front().second.dtype());
    replicas_.push_back(std::move(replica));
  }
}

void DataParallel::bind_replica(size_t i) {
  const nn::NamedTensors params = module_->named_parameters(), buffers = module_->named_buffers();
  const nn::NamedTensors rp = replicas_[i]->named_parameters(), rb = replicas_[i]->named_buffers();
  const bool grad = autograd::GradMode::is_enabled();
  for (size_t k = 0; k < params.size(); ++k)
    rebind(rp[k].second, params[k].second, devices_[i], grad && params[k].second.requires_grad(), false);
  // Buffers are copied (not shared) so replicas updating them in parallel do
  // not race; their updates are discarded.
  for (size_t k = 0; k < buffers.size(); ++k) rebind(rb[k].second, buffers[k].second, devices_[i], false, true);
  replicas_[i]->train(module_->is_training());
}

Tensor DataParallel::forward(const Tensor& x) {
  if (devices_.size() == 1) return module_->forward(x);
  return run_replicas({x}, false);
}

Tensor DataParallel::forward_inputs(const std::vector<Tensor>& inputs) {
  if (devices_.size() == 1) return module_->forward_inputs(inputs);
  return run_replicas(inputs, true);
}

Tensor DataParallel::run_replicas(const std::vector<Tensor>& in, bool several) {
  ANVIL_CHECK(!in.empty() && in.front().defined(), "DataParallel: the first input must be defined");
  ANVIL_CHECK(in.front().dim() >= 1, "DataParallel: the input must have a batch dimension, got ",
              in.front().shape_str());
  const int64_t batch = in.front().size(0);
  for (size_t j = 0; j < in.size(); ++j) {
    const Tensor& x = in[j];
    if (!x.defined()) continue;
    ANVIL_CHECK(x.dim() >= 1 && x.size(0) == batch, "DataParallel: every input is split along dim 0, so each needs ",
                "the first input's batch size ", batch, ", but input ", j, " is ", x.shape_str(), " (first input ",
                in.front().shape_str(), ")");
    ANVIL_CHECK(x.device() == devices_.front(), "DataParallel: input ", j, " is on ", x.device().str(),
                " but must be on the first device ", devices_.front().str());
  }
  // As torch.chunk: equal pieces of ceil(batch / devices); fewer replicas run
  // when the batch is smaller than the device count.
  const int64_t piece = (batch + static_cast<int64_t>(devices_.size()) - 1) / static_cast<int64_t>(devices_.size());
  const size_t used = piece == 0 ? 1 : static_cast<size_t>((batch + piece - 1) / piece);
  std::vector<std::vector<Tensor>> inputs(used, std::vector<Tensor>(in.size()));
  std::vector<Tensor> outputs(used);
  for (size_t i = 0; i < used; ++i) {
    const int64_t begin = static_cast<int64_t>(i) * piece;
    for (size_t j = 0; j < in.size(); ++j)
      if (in[j].defined()) inputs[i][j] = in[j].narrow(0, begin, std::min(piece, batch - begin)).to(devices_[i]);
    if (i > 0) bind_replica(i);
  }
  auto run = [&](nn::Module& m, const std::vector<Tensor>& x) {
    return several ? m.forward_inputs(x) : m.forward(x.front());
  };
  // Threads inherit nothing thread-local: pass the caller's grad mode on.
  const bool grad = autograd::GradMode::is_enabled();
  std::vector<std::exception_ptr> errors(used);
  std::vector<std::thread> threads;
  for (size_t i = 1; i < used; ++i)
    threads.emplace_back([&, i] {
      try {
        EnableGradGuard mode(grad);
        outputs[i] = run(*replicas_[i], inputs[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  try {
    outputs[0] = run(*module_, inputs[0]);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (used == 1) return outputs[0];
  for (auto& out : outputs) out = out.to(devices_.front());
  return cat(outputs, 0);
}

}  // namespace anvil::distributed
