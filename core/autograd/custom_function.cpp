#include "core/autograd/custom_function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "core/autograd/node.h"
#include "core/dispatch.h"
#include "core/factory.h"

namespace anvil::autograd {

// ---------------------------------------------------------------- SavedValue

namespace {
template <class V>
const V& saved_as(
    const std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>>& v,
    const char* wanted, const char* held) {
  const V* p = std::get_if<V>(&v);
  ANVIL_CHECK(p != nullptr, "AutogradContext::saved_data: expected a value of type ", wanted, ", holds ", held);
  return *p;
}
}  // namespace

const char* SavedValue::type_name() const {
  static const char* names[] = {"None", "Tensor", "double", "int", "bool", "string", "int list"};
  return names[v_.index()];
}
Tensor SavedValue::toTensor() const { return saved_as<Tensor>(v_, "Tensor", type_name()); }
double SavedValue::toDouble() const {
  if (isInt()) return static_cast<double>(std::get<int64_t>(v_));
  return saved_as<double>(v_, "double", type_name());
}
int64_t SavedValue::toInt() const { return saved_as<int64_t>(v_, "int", type_name()); }
bool SavedValue::toBool() const { return saved_as<bool>(v_, "bool", type_name()); }
const std::string& SavedValue::toStringRef() const { return saved_as<std::string>(v_, "string", type_name()); }
std::vector<int64_t> SavedValue::toIntVector() const {
  return saved_as<std::vector<int64_t>>(v_, "int list", type_name());
}

// ---------------------------------------------------------------- the node

// The graph node of one custom function call: owns the context.
class CustomFunctionNode : public Node {
 public:
  CustomFunctionNode(std::string name, detail::CustomBackward backward, detail::CustomInputs inputs)
      : backward_(backward), is_tensor_(std::move(inputs.is_tensor)) {
    ctx_.name_ = std::move(name);
    for (const Tensor& t : inputs.tensors) {
      const bool needs = GradMode::is_enabled() && t.defined() && t.requires_grad();
      ctx_.needs_input_grad_.push_back(needs);
      executable_ = executable_ || needs;
      InputInfo info;
      if (t.defined()) info = {true, t.shape(), t.dtype(), t.device()};
      inputs_.push_back(std::move(info));
    }
    tensor_inputs_ = std::move(inputs.tensors);
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return ctx_.name_; }
  void start(const std::shared_ptr<CustomFunctionNode>& self) {
    ctx_.node_ = self;
    ctx_.in_forward_ = true;
  }
  void release_saved() override {
    ctx_.saved_.clear();
    ctx_.saved_data.clear();
    ctx_.released_ = true;
  }

  AutogradContext ctx_;
  bool executable_ = false;
  variable_list tensor_inputs_;  // cleared after forward
  struct InputInfo {
    bool defined = false;
    Shape shape;
    DType dtype = kFloat32;
    Device device;
  };
  std::vector<InputInfo> inputs_;
  std::vector<InputInfo> outputs_;  // for materialized zero gradients

 private:
  detail::CustomBackward backward_;
  std::vector<bool> is_tensor_;  // per forward argument
};

std::vector<Tensor> CustomFunctionNode::apply(std::vector<Tensor>&& grads) {
  const std::string& fn = ctx_.name_;
  ANVIL_CHECK(!ctx_.released_, "backward: trying to backward through custom function ", fn,
              " a second time; its saved tensors were freed after the first backward. Pass retain_graph=true "
              "to the first backward to keep them.");
  grads.resize(outputs_.size());
  if (ctx_.materialize_grads_)
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined() && outputs_[i].defined)  // an undefined output stays undefined
        grads[i] = zeros(outputs_[i].shape, TensorOptions().dtype(outputs_[i].dtype).device(outputs_[i].device));

  variable_list results = backward_(&ctx_, std::move(grads));

  const size_t num_args = is_tensor_.size();
  if (results.size() > num_args && std::all_of(results.begin() + static_cast<std::ptrdiff_t>(num_args), results.end(),
                                               [](const Tensor& t) { return !t.defined(); }))
    results.resize(num_args);
  ANVIL_CHECK(results.size() == num_args, "custom function ", fn, ": backward returned ", results.size(),
              " gradients, expected ", num_args,
              " (one per forward argument after the context, one per element "
              "of a tensor list; an undefined Tensor for a non-tensor argument)");
  std::vector<Tensor> out;
  out.reserve(inputs_.size());
  for (size_t i = 0; i < num_args; ++i) {
    if (!is_tensor_[i]) {
      ANVIL_CHECK(!results[i].defined(), "custom function ", fn,
                  ": backward returned a defined gradient at "
                  "position ",
                  i, ", but forward argument ", i, " is not a tensor; return an undefined Tensor()");
      continue;
    }
    const size_t k = out.size();
    Tensor g = std::move(results[i]);
    if (g.defined() && ctx_.needs_input_grad_[k]) {
      const InputInfo& in = inputs_[k];
      ANVIL_CHECK(g.shape() == in.shape, "custom function ", fn, ": backward returned a gradient of shape ",
                  g.shape_str(), " for input ", k, " of shape ", in.shape);
      ANVIL_CHECK(g.device() == in.device, "custom function ", fn, ": backward returned a gradient on ",
                  g.device().str(), " for input ", k, " on ", in.device.str());
      if (g.dtype() != in.dtype) g = g.to(in.dtype);
    } else {
      g = Tensor();  // not wanted: dropped, as libtorch does
    }
    out.push_back(std::move(g));
  }
  return out;
}

// ---------------------------------------------------------------- context

namespace {
bool contains(const std::vector<const TensorImpl*>& set, const TensorImpl* p) {
  return std::find(set.begin(), set.end(), p) != set.end();
}
}  // namespace

void AutogradContext::save_for_backward(variable_list to_save) {
  ANVIL_CHECK(in_forward_, "custom function ", name_, ": save_for_backward may only be called in forward");
  to_save_ = std::move(to_save);
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  ANVIL_CHECK(in_forward_, "custom function ", name_, ": mark_dirty may only be called in forward");
  for (const Tensor& t : inputs)
    if (t.defined()) dirty_.push_back(t.impl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  ANVIL_CHECK(in_forward_, "custom function ", name_, ": mark_non_differentiable may only be called in forward");
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.push_back(t.impl());
}

bool AutogradContext::needs_input_grad(size_t index) const {
  ANVIL_CHECK(index < needs_input_grad_.size(), "custom function ", name_, ": needs_input_grad(", index,
              ") but the function has ", needs_input_grad_.size(), " tensor inputs");
  return needs_input_grad_[index];
}

variable_list AutogradContext::get_saved_variables() const {
  ANVIL_CHECK(!released_, "custom function ", name_,
              ": the saved tensors were freed after backward ran; pass "
              "retain_graph=true to the first backward to use them again");
  ANVIL_CHECK(saved_ready_, "custom function ", name_,
              ": get_saved_variables is for backward; in forward use "
              "the tensors themselves");
  std::shared_ptr<Node> node = node_.lock();
  variable_list out;
  out.reserve(saved_.size());
  for (size_t i = 0; i < saved_.size(); ++i) {
    const Saved& s = saved_[i];
    if (!s.data.defined()) {
      out.emplace_back();
      continue;
    }
    ANVIL_CHECK(s.data.version() == s.version, "custom function ", name_, ": saved tensor ", i, " (",
                ::anvil::detail::describe(s.data), ") was modified in place after forward saved it (version ",
                s.version, " when saved, now ", s.data.version(), "); clone it before changing it, or don't modify it");
    if (!s.is_output || !GradMode::is_enabled() || !node) {
      out.push_back(s.data);
      continue;
    }
    // create_graph: the saved output carries its history again.
    Tensor t = s.data.detach();
    AutogradMeta& m = meta(t);
    m.requires_grad = true;
    m.grad_fn = node;
    m.output_nr = s.output_nr;
    out.push_back(std::move(t));
  }
  return out;
}

// ---------------------------------------------------------------- apply's halves

namespace detail {

std::string demangled_name(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

std::shared_ptr<AutogradContext> begin_custom_function(std::string name, CustomBackward backward, CustomInputs inputs) {
  auto node = std::make_shared<CustomFunctionNode>(std::move(name), backward, std::move(inputs));
  // The edges are taken before forward, which may change an input in place.
  if (node->executable_)
    for (const Tensor& t : node->tensor_inputs_) node->next_edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
  node->start(node);
  return std::shared_ptr<AutogradContext>(node, &node->ctx_);  // shares the node's ownership
}

void finish_custom_function(AutogradContext& ctx, variable_list& outputs) {
  auto node = std::static_pointer_cast<CustomFunctionNode>(ctx.node_.lock());
  ctx.in_forward_ = false;
  const std::string& fn = ctx.name_;
  auto is_input = [&](const TensorImpl* p) {
    return std::any_of(node->tensor_inputs_.begin(), node->tensor_inputs_.end(),
                       [p](const Tensor& t) { return t.impl() == p; });
  };
  auto output_index = [&](const TensorImpl* p) -> std::ptrdiff_t {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].impl() == p) return static_cast<std::ptrdiff_t>(i);
    return -1;
  };
  for (const TensorImpl* d : ctx.dirty_) {
    ANVIL_CHECK(is_input(d), "custom function ", fn,
                ": mark_dirty got a tensor that is not an input of forward; "
                "mark only the inputs forward modified in place");
    ANVIL_CHECK(output_index(d) >= 0, "custom function ", fn,
                ": an input marked dirty (modified in place) was not "
                "returned by forward; return it as one of the outputs");
  }

  node->num_outputs = static_cast<uint32_t>(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    CustomFunctionNode::InputInfo info;
    if (o.defined()) info = {true, o.shape(), o.dtype(), o.device()};
    node->outputs_.push_back(info);
    if (!o.defined()) continue;
    const bool dirty = contains(ctx.dirty_, o.impl());
    const bool differentiable = !contains(ctx.non_differentiable_, o.impl()) && is_floating(o.dtype());
    // An input returned unchanged becomes an alias with a history of its own.
    if (!dirty && is_input(o.impl())) o = o.detach();
    if (!node->executable_) continue;
    AutogradMeta* m = meta_if(o);
    if (dirty) {
      ANVIL_CHECK(!(m && m->requires_grad && !m->grad_fn), "custom function ", fn, ": input ",
                  ::anvil::detail::describe(o),
                  " is a leaf tensor that requires grad and was modified in place (mark_dirty); "
                  "clone it first, or call the function under NoGradGuard");
      ANVIL_CHECK(!(o.impl()->is_view && m && m->requires_grad), "custom function ", fn,
                  ": in-place change (mark_dirty) of a view of a tensor with autograd history (",
                  ::anvil::detail::describe(o), ") is not supported; pass the whole tensor or clone the view");
    }
    if (!differentiable) {
      if (m) m->requires_grad = false, m->grad_fn = nullptr;
      continue;
    }
    AutogradMeta& om = meta(o);
    om.requires_grad = true;
    om.grad_fn = node;
    om.output_nr = static_cast<uint32_t>(i);
  }

  if (node->executable_) {
    for (const Tensor& t : ctx.to_save_) {
      AutogradContext::Saved s;
      if (t.defined()) {
        const std::ptrdiff_t j = output_index(t.impl());
        // A saved output is kept without its history: the node would own itself.
        if (j >= 0)
          s = {t.detach(), t.version(), true, static_cast<uint32_t>(j)};
        else
          s = {t, t.version(), false, 0};
      }
      ctx.saved_.push_back(std::move(s));
    }
  }
  ctx.to_save_.clear();
  ctx.saved_ready_ = true;
  node->tensor_inputs_.clear();
}

}  // namespace detail

}  // namespace anvil::autograd
