#pragma once
/// @file
/// Custom autograd functions in libtorch's shape (torch::autograd::Function<T>):
/// a struct with a static forward and backward and a context between them.
///
///     struct MulAdd : autograd::Function<MulAdd> {
///       static Tensor forward(autograd::AutogradContext* ctx, Tensor x, Tensor w, double c) {
///         ctx->save_for_backward({x, w});
///         ctx->saved_data["c"] = c;
///         return x * w + c;
///       }
///       static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
///         auto saved = ctx->get_saved_variables();
///         return {g[0] * saved[1], g[0] * saved[0], Tensor()};  // one per forward argument
///       }
///     };
///     Tensor y = MulAdd::apply(x, w, 2.0);
///
/// forward runs without grad mode and returns a Tensor or a variable_list
/// (several outputs); apply returns the same. backward gets one gradient per
/// output (zeros where none arrived, unless set_materialize_grads(false)) and
/// returns one gradient per forward argument after the context: a tensor
/// list argument counts one per element, a non-tensor argument takes an
/// undefined tensor (extra trailing undefined gradients are allowed, as in
/// libtorch). Returned gradients must have their input's shape and device;
/// the dtype is cast to the input's.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"  // grad_fn()->name(), as in libtorch
#include "core/tensor.h"

namespace anvil::autograd {

using variable_list = std::vector<Tensor>;  ///< libtorch's name

class AutogradContext;
namespace detail {
void finish_custom_function(AutogradContext& ctx, std::vector<Tensor>& outputs);
}  // namespace detail

/// A value kept in ctx->saved_data: libtorch's IValue, for what forward
/// hands to backward besides tensors (sizes, scalars, flags, names).
class SavedValue {
 public:
  SavedValue() = default;
  /// A tensor.
  SavedValue(Tensor v) : v_(std::move(v)) {}  // NOLINT: implicit, as IValue's
  /// A double.
  SavedValue(double v) : v_(v) {}  // NOLINT
  /// An int64.
  SavedValue(int64_t v) : v_(v) {}  // NOLINT
  /// An int, stored as int64.
  SavedValue(int v) : v_(static_cast<int64_t>(v)) {}  // NOLINT
  /// A bool.
  SavedValue(bool v) : v_(v) {}  // NOLINT
  /// A string.
  SavedValue(std::string v) : v_(std::move(v)) {}  // NOLINT
  /// A string.
  SavedValue(const char* v) : v_(std::string(v)) {}  // NOLINT
  /// A list of int64.
  SavedValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  /// A shape, as a list of int64.
  SavedValue(const Shape& v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}  // NOLINT

  bool isNone() const { return v_.index() == 0; }  ///< Whether it holds nothing (default-constructed).
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }  ///< Whether it holds a tensor.
  bool isDouble() const { return std::holds_alternative<double>(v_); }  ///< Whether it holds a double.
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }  ///< Whether it holds an int64.
  bool isBool() const { return std::holds_alternative<bool>(v_); }  ///< Whether it holds a bool.
  bool isString() const { return std::holds_alternative<std::string>(v_); }  ///< Whether it holds a string.
  /// Whether it holds a list of int64.
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(v_); }

  Tensor toTensor() const;  ///< The tensor; throws naming the type held otherwise.
  double toDouble() const;  ///< an int converts, as IValue's
  int64_t toInt() const;  ///< The int64; throws naming the type held otherwise.
  bool toBool() const;  ///< The bool; throws naming the type held otherwise.
  const std::string& toStringRef() const;  ///< The string; throws naming the type held otherwise.
  std::vector<int64_t> toIntVector() const;  ///< The list of int64; throws naming the type held otherwise.
  const char* type_name() const;  ///< The name of the kind held, for error messages.

 private:
  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>> v_;
};

/// What a custom Function's forward and backward share: saved tensors and values, and the marks libtorch's ctx has.
class AutogradContext {
 public:
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  /// Non-tensor values for backward (tensors go through save_for_backward,
  /// which checks them for in-place changes).
  std::unordered_map<std::string, SavedValue> saved_data;

  /// In forward: tensors backward needs (inputs, outputs or intermediates).
  void save_for_backward(variable_list to_save);
  /// In backward: the saved tensors, in order. Fails with a message naming
  /// the function if one was modified in place after forward.
  variable_list get_saved_variables() const;
  /// In forward: inputs that forward modified in place (they must be returned
  /// as outputs; they take this function as their history).
  void mark_dirty(const variable_list& inputs);
  /// In forward: outputs with no gradient (indices, masks); they do not
  /// require grad, and backward receives zeros for them.
  void mark_non_differentiable(const variable_list& outputs);
  /// Whether backward gets zeros (true, the default) or undefined tensors for
  /// outputs that received no gradient.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Whether tensor input `index` (counting tensor arguments, list elements
  /// one each) needs a gradient; valid in forward and backward.
  bool needs_input_grad(size_t index) const;
  /// Number of forward arguments (needs_input_grad's range).
  size_t num_inputs() const { return needs_input_grad_.size(); }
  const std::string& name() const { return name_; }  ///< The Function's name, as the graph node shows it.

 private:
  friend class CustomFunctionNode;
  friend void detail::finish_custom_function(AutogradContext& ctx, std::vector<Tensor>& outputs);
  AutogradContext() = default;

  struct Saved {
    Tensor data;  ///< an output is kept detached (no cycle through the node)
    uint64_t version = 0;
    bool is_output = false;
    uint32_t output_nr = 0;
  };
  std::string name_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
  bool in_forward_ = false;
  bool saved_ready_ = false;
  bool released_ = false;
  variable_list to_save_;
  std::vector<Saved> saved_;
  std::vector<const TensorImpl*> dirty_, non_differentiable_;
  std::weak_ptr<Node> node_;
};

namespace detail {

using CustomBackward = variable_list (*)(AutogradContext*, variable_list);

/// The tensor arguments of apply(), flattened as libtorch's extract_vars:
/// one entry per argument, one per element of a tensor list.
struct CustomInputs {
  variable_list tensors;  ///< the tensor entries, in order
  std::vector<bool> is_tensor;  ///< per entry: a tensor (true) or another argument
  void add(const Tensor& t) { tensors.push_back(t), is_tensor.push_back(true); }
  void add(const variable_list& ts) {
    for (const Tensor& t : ts) add(t);
  }
  void add(const std::optional<Tensor>& t) {
    if (t && t->defined())
      add(*t);
    else
      is_tensor.push_back(false);
  }
  template <class U> void add(const U&) { is_tensor.push_back(false); }
};

std::string demangled_name(const std::type_info& type);

/// Before forward: the context (owned by the graph node when an input needs
/// grad under grad mode), with needs_input_grad filled in.
std::shared_ptr<AutogradContext> begin_custom_function(std::string name, CustomBackward backward, CustomInputs inputs);
/// After forward: checks the marks, gives the outputs their history and
/// keeps the saved tensors. `outputs` may be replaced (an input returned as
/// is becomes an alias with its own history).
void finish_custom_function(AutogradContext& ctx, variable_list& outputs);

}  // namespace detail

/// The base of a custom autograd function: `struct F : Function<F>` with static forward and backward (see the file
/// comment).
template <class T> struct Function {
  /// Runs T::forward(ctx, args...) without grad mode and records T::backward for its outputs; returns forward's result.
  template <class X = T, class... Args> static auto apply(Args&&... args) {
    detail::CustomInputs inputs;
    (inputs.add(args), ...);
    std::shared_ptr<AutogradContext> ctx =
        detail::begin_custom_function(detail::demangled_name(typeid(X)), &X::backward, std::move(inputs));
    using Result = std::decay_t<decltype(X::forward(ctx.get(), std::forward<Args>(args)...))>;
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, variable_list>,
                  "Function<T>: T::forward must return a Tensor or a variable_list");
    Result result;
    {
      NoGradGuard no_grad;
      result = X::forward(ctx.get(), std::forward<Args>(args)...);
    }
    if constexpr (std::is_same_v<Result, Tensor>) {
      variable_list outputs{std::move(result)};
      detail::finish_custom_function(*ctx, outputs);
      return outputs[0];
    } else {
      detail::finish_custom_function(*ctx, result);
      return result;
    }
  }
};

}  // namespace anvil::autograd
