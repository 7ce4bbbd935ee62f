#pragma once
/// @file
/// Sequential chains modules; ModuleList just holds them (its owner decides
/// how to call them). Children are named "0", "1", ... as in PyTorch, so
/// state_dict keys ("0.weight", "layers.3.bias") match.
///
///     auto mlp = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 256),
///                                                 std::make_shared<nn::ReLU>(),
///                                                 std::make_shared<nn::Linear>(256, 10));
///     Tensor logits = mlp->forward(x);
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace anvil::nn {

/// What Sequential and ModuleList share: an ordered list of children.
class ModuleListBase : public Module {
 public:
  using Ptr = std::shared_ptr<Module>;  ///< A child module.

  /// Appends m, named by its position, and returns it with its own type.
  template <typename M> std::shared_ptr<M> push_back(std::shared_ptr<M> m) {
    add(std::to_string(modules_.size()), m);
    return m;
  }
  /// push_back(m), libtorch's other name.
  template <typename M> std::shared_ptr<M> append(std::shared_ptr<M> m) { return push_back(std::move(m)); }
  /// Appends under an explicit name (it must not contain '.'), like an
  /// OrderedDict passed to torch.nn.Sequential.
  template <typename M> std::shared_ptr<M> push_back(const std::string& name, std::shared_ptr<M> m) {
    add(name, m);
    return m;
  }

  size_t size() const { return modules_.size(); }  ///< Number of modules.
  bool empty() const { return modules_.empty(); }  ///< Whether it holds no module.
  const Ptr& operator[](size_t index) const;  ///< checked
  /// The module at index as its concrete type, or an error naming both types.
  template <typename M> std::shared_ptr<M> at(size_t index) const {
    auto cast = std::dynamic_pointer_cast<M>((*this)[index]);
    ANVIL_CHECK(cast != nullptr, type_name(), ": module ", index, " is a ", (*this)[index]->type_name(),
                ", not the requested type");
    return cast;
  }
  std::vector<Ptr>::const_iterator begin() const { return modules_.begin(); }  ///< Iterates over the modules in order.
  std::vector<Ptr>::const_iterator end() const { return modules_.end(); }  ///< End of the iteration.

 protected:
  /// A list named `type_name` in repr().
  explicit ModuleListBase(std::string type_name) : Module(std::move(type_name)) {}
  void add(const std::string& name, Ptr m);  ///< Appends `m` as child `name`.

 private:
  std::vector<Ptr> modules_;
};

/// Modules called in order, each on the previous one's output, as torch.nn.Sequential.
class Sequential : public ModuleListBase {
 public:
  Sequential() : ModuleListBase("Sequential") {}
  Sequential(std::initializer_list<Ptr> modules);  ///< Holds `modules` in order.
  explicit Sequential(const std::vector<Ptr>& modules);  ///< Holds `modules` in order.
  /// Holds `modules` in order: Sequential(std::make_shared<Linear>(4, 8), std::make_shared<ReLU>()).
  template <typename... Ms> explicit Sequential(std::shared_ptr<Ms>... modules) : ModuleListBase("Sequential") {
    (push_back(std::move(modules)), ...);
  }

  /// Each module's forward on the previous one's output.
  Tensor forward(const Tensor& x) override;
  /// The first module takes all the inputs (forward_inputs), the rest chain
  /// one tensor each, as libtorch's Sequential with a multi-input first module.
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;
};

/// Holds modules for its owner to call (registered, so their parameters are the owner's), as torch.nn.ModuleList.
class ModuleList : public ModuleListBase {
 public:
  ModuleList() : ModuleListBase("ModuleList") {}
  ModuleList(std::initializer_list<Ptr> modules);  ///< Holds `modules` in order.
  explicit ModuleList(const std::vector<Ptr>& modules);  ///< Holds `modules` in order.
};

}  // namespace anvil::nn
