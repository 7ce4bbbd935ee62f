#include "nn/module.h"

#include <optional>
#include <set>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/dispatch.h"

namespace anvil::nn {

namespace {
// The module whose default forward is running on this thread: a module that
// overrides neither forward nor forward_inputs would otherwise recurse.
thread_local const Module* default_forward_of = nullptr;
}  // namespace

Tensor Module::forward(const Tensor& x) {
  ANVIL_CHECK(default_forward_of != this, type_name_,
              ": this module has no forward(x) nor forward_inputs(inputs); call its own forward method");
  const Module* previous = default_forward_of;
  default_forward_of = this;
  struct Restore {
    const Module* previous;
    ~Restore() { default_forward_of = previous; }
  } restore{previous};
  return forward_inputs({x});
}

Tensor Module::forward_inputs(const std::vector<Tensor>& inputs) {
  ANVIL_CHECK(inputs.size() == 1, type_name_, ": forward takes one tensor, got ", inputs.size(),
              " inputs (a module with several inputs overrides forward_inputs)");
  return forward(inputs[0]);
}

void set_data(Tensor& t, const Tensor& data) {
  TensorImpl* impl = t.impl();
  impl->storage = data.storage();
  impl->shape = data.shape();
  impl->strides = data.strides();
  impl->offset = data.offset();
  impl->dtype = data.dtype();
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  ANVIL_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": invalid parameter name '", name,
              "' (must be non-empty without '.')");
  for (auto& [n, _] : params_) ANVIL_CHECK(n != name, type_name_, ": parameter '", name, "' is already registered");
  if (t.defined()) {
    // A leaf is kept as is, so two modules can share (tie) one parameter.
    if (!t.is_leaf()) t = t.detach();
    if (requires_grad && !t.requires_grad()) t.requires_grad_(true);
  }
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  ANVIL_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": invalid buffer name '", name, "'");
  for (auto& [n, _] : buffers_) ANVIL_CHECK(n != name, type_name_, ": buffer '", name, "' is already registered");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  ANVIL_CHECK(m != nullptr, type_name_, ": child module '", name, "' is null");
  ANVIL_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": invalid module name '", name, "'");
  for (auto& [n, _] : children_) ANVIL_CHECK(n != name, type_name_, ": module '", name, "' is already registered");
  children_.emplace_back(name, std::move(m));
}

namespace {

void collect(const Module& m, const std::string& prefix, bool recurse, bool params, NamedTensors& out,
             std::set<const TensorImpl*>& seen) {
  const NamedTensors& own = params ? m.named_parameters(false) : m.named_buffers(false);
  for (auto& [name, t] : own)
    if (t.defined() && seen.insert(t.impl()).second) out.emplace_back(prefix + name, t);
  if (!recurse) return;
  for (auto& [name, child] : m.named_children()) collect(*child, prefix + name + ".", true, params, out, seen);
}

}  // namespace

NamedTensors Module::named_parameters(bool recurse) const {
  if (!recurse) {
    NamedTensors own;
    for (auto& p : params_)
      if (p.second.defined()) own.push_back(p);
    return own;
  }
  NamedTensors out;
  std::set<const TensorImpl*> seen;  // a parameter shared by two layers is listed once
  collect(*this, "", true, true, out, seen);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  if (!recurse) {
    NamedTensors own;
    for (auto& b : buffers_)
      if (b.second.defined()) own.push_back(b);
    return own;
  }
  NamedTensors out;
  std::set<const TensorImpl*> seen;
  collect(*this, "", true, false, out, seen);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [_, m] : children_) out.push_back(m);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  // A module on the stack has no owner: hand out a non-owning pointer to it.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  out.emplace_back("", self);
  for (auto& [name, child] : children_)
    for (auto& [sub, m] : child->named_modules()) out.emplace_back(sub.empty() ? name : name + "." + sub, m);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [_, child] : children_) child->apply(fn);
  fn(*this);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

namespace {

void move_tensor(Tensor& t, Device device, std::optional<DType> dtype) {
  NoGradGuard no_grad;
  Tensor moved = t.to(device);
  if (dtype && is_floating(t.dtype())) moved = moved.to(*dtype);
  if (moved.same(t)) return;
  set_data(t, moved.detach());
  if (Tensor g = t.grad(); g.defined()) {
    Tensor gm = g.to(device);
    if (dtype && is_floating(g.dtype())) gm = gm.to(*dtype);
    t.set_grad(gm);
  }
}

}  // namespace

void Module::to(Device device) {
  for (auto& t : parameters()) move_tensor(t, device, std::nullopt);
  for (auto& t : buffers()) move_tensor(t, device, std::nullopt);
}

void Module::to(DType dtype) {
  ANVIL_CHECK(is_floating(dtype), type_name_, ".to: expected a floating dtype, got ", dtype);
  for (auto& t : parameters()) move_tensor(t, t.device(), dtype);
  for (auto& t : buffers()) move_tensor(t, t.device(), dtype);
}

void Module::to(Device device, DType dtype) {
  to(device);
  to(dtype);
}

Device Module::device() const {
  auto ps = parameters();
  return ps.empty() ? Device::cpu() : ps.front().device();
}

void Module::zero_grad() {
  for (auto& p : parameters()) p.set_grad({});
}

StateDict Module::state_dict() const {
  StateDict out = named_parameters();
  for (auto& b : named_buffers()) out.push_back(b);
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict mine = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  for (auto& [name, t] : mine) {
    const Tensor* src = nullptr;
    for (auto& [n, s] : state)
      if (n == name) src = &s;
    if (!src) {
      missing.push_back(name);
      continue;
    }
    if (src->shape() != t.shape()) {
      mismatched.push_back(name + " (checkpoint " + src->shape_str() + ", model " + t.shape_str() + ")");
      continue;
    }
  }
  for (auto& [n, _] : state) {
    bool known = false;
    for (auto& [name, __] : mine) known = known || name == n;
    if (!known) unexpected.push_back(n);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  ANVIL_CHECK(mismatched.empty(), type_name_, ".load_state_dict: shape mismatch for ", join(mismatched));
  ANVIL_CHECK(!strict || (missing.empty() && unexpected.empty()), type_name_,
              ".load_state_dict: ", missing.empty() ? "" : "missing keys: " + join(missing),
              missing.empty() || unexpected.empty() ? "" : "; ",
              unexpected.empty() ? "" : "unexpected keys: " + join(unexpected));
  NoGradGuard no_grad;
  for (auto& [name, t] : mine)
    for (auto& [n, src] : state)
      if (n == name) {
        Tensor dst = t;
        dst.copy_(src);  // keeps our device and dtype
      }
}

std::string Module::repr() const {
  std::ostringstream os;
  os << type_name_ << '(' << extra_repr();
  if (!children_.empty()) {
    os << '\n';
    for (auto& [name, child] : children_) {
      std::string sub = child->repr();
      std::string indented;
      for (char c : sub) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
      os << "  (" << name << "): " << indented << '\n';
    }
  }
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace anvil::nn
