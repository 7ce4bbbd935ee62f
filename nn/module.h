#pragma once
/// @file
/// Module: the base of every layer and model. It owns named parameters,
/// buffers and child modules, and gives the tree-wide operations: train/eval,
/// to(device, dtype), parameters(), state_dict(), apply().
///
///     struct Mlp : nn::Module {
///       std::shared_ptr<nn::Linear> fc1, fc2;
///       Mlp() {
///         fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, 256));
///         fc2 = register_module("fc2", std::make_shared<nn::Linear>(256, 10));
///       }
///       Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x))); }
///     };
///
/// Parameters are held as Tensor handles; to() changes the data behind the
/// handle, so a layer's members (`weight`, `bias`) stay valid.
#include <concepts>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace anvil::nn {

/// Ordered name -> tensor pairs ("fc1.weight", ...), as PyTorch's state_dict.
using StateDict = std::vector<std::pair<std::string, Tensor>>;
/// Ordered name -> tensor pairs, as named_parameters() and named_buffers() return them.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// The base of every layer and model: named parameters, buffers and child modules, and the operations over the tree.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// A module named `type_name` in repr() ("Linear", "Sequential", ...).
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The forward of modules that map one tensor to one tensor (what
  /// Sequential chains). A module that overrides only forward_inputs gets it
  /// here as forward_inputs({x}).
  virtual Tensor forward(const Tensor& x);
  /// The forward of modules that take several tensors, (query, key, value,
  /// mask) or (input_ids, attention_mask): what Sequential passes to its first
  /// module, and what DDP, Checkpointed and the Trainer call with a tuple
  /// batch. An undefined Tensor stands for an absent optional input. The
  /// default takes exactly one tensor and calls forward(x); a module with
  /// several outputs (MultiheadAttention, LSTM) returns its main one here and
  /// all of them from its own typed forward.
  virtual Tensor forward_inputs(const std::vector<Tensor>& inputs);
  Tensor operator()(const Tensor& x) { return forward(x); }  ///< forward(x), as a Python call.
  /// model(ids, mask), as a Python call: forward_inputs({ids, mask}).
  template <typename... Ts>
  requires(sizeof...(Ts) >= 1 && (std::convertible_to<const Ts&, Tensor> && ...)) Tensor operator()(const Tensor& x,
                                                                                                    const Ts&... rest) {
    return forward_inputs({x, Tensor(rest)...});
  }

  const std::string& type_name() const { return type_name_; }  ///< The name repr() prints ("Linear").
  /// A one-line description of the module's own settings, e.g. "in=784, out=256".
  virtual std::string extra_repr() const { return ""; }
  std::string repr() const;  ///< the whole tree, like PyTorch's print(model)

  // --- the tree ---
  /// The parameters of this module (and with `recurse`, of its descendants), in registration order.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;  ///< parameters() with their dotted names ("fc1.weight").
  /// The buffers (running statistics, position ids, ...) of this module and, with `recurse`, its descendants.
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;  ///< buffers() with their dotted names.
  std::vector<std::shared_ptr<Module>> children() const;  ///< The direct children, in registration order.
  /// The direct children with their names.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// This module and all descendants, depth first, with dotted names ("" for this one).
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();
  void apply(const std::function<void(Module&)>& fn);  ///< children first, then this

  // --- modes and placement ---
  /// Training mode (or eval with on = false) for this module and its descendants; dropout and batch norm read it.
  virtual void train(bool on = true);
  void eval() { train(false); }  ///< train(false).
  bool is_training() const { return training_; }  ///< Whether the module is in training mode.
  ///@{
  /// Moves (and/or casts floating tensors of) every parameter and buffer.
  void to(Device device);
  void to(DType dtype);
  void to(Device device, DType dtype);
  ///@}
  Device device() const;  ///< of the first parameter (cpu if none)
  void zero_grad();  ///< sets every parameter's grad to undefined

  // --- state ---
  /// Every parameter, then every buffer, by dotted name: what load_state_dict and save_safetensors take.
  StateDict state_dict() const;
  /// strict: every key must match, with equal shapes; errors name the keys.
  void load_state_dict(const StateDict& state, bool strict = true);

 protected:
  /// Registration returns what it stores, so members can be set in one line:
  ///
  ///     weight = register_parameter("weight", empty({out, in}));
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  /// Adds a buffer (state that is no parameter, saved in state_dict) and returns it.
  Tensor register_buffer(const std::string& name, Tensor t);
  /// Adds `m` as the child `name` and returns it, typed: fc = register_module("fc", std::make_shared<Linear>(4, 2)).
  template <typename M> std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }
  /// Adds `m` as the child `name` (register_module without the typed return).
  void add_child(const std::string& name, std::shared_ptr<Module> m);

 private:
  std::string type_name_;
  bool training_ = true;
  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

/// Prints repr(), the module tree, as print(model) in PyTorch: std::cout << *model.
std::ostream& operator<<(std::ostream& os, const Module& m);
/// std::cout << model for a shared_ptr to a module, as libtorch's module
/// holders print. (A template: it must beat the standard library's
/// shared_ptr printer, which prints the address.)
template <std::derived_from<Module> M> std::ostream& operator<<(std::ostream& os, const std::shared_ptr<M>& m) {
  return m ? os << *m : os << "nullptr";
}

/// Replaces the data behind `t` (every handle sees it), keeping its autograd
/// leaf status. What Module::to and load_state_dict use.
void set_data(Tensor& t, const Tensor& data);

}  // namespace anvil::nn
