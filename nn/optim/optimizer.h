#pragma once
/// @file
/// Optimizer: the base of SGD, Adam and AdamW. It holds parameter groups (each
/// with its own hyper-parameters), the per-parameter state (step count and
/// buffers such as exp_avg), and gives zero_grad(), step(), lr get/set and a
/// state_dict that resumes training exactly.
///
///     optim::AdamW opt(model->parameters(), {.lr = 3e-4});
///     for (...) { opt.zero_grad(); loss.backward(); opt.step(); }
///
/// Groups with their own settings (any group without options takes the
/// optimizer's defaults):
///
///     optim::SGDOptions base{.lr = 0.1, .momentum = 0.9};
///     optim::SGDOptions head = base; head.lr = 0.01;
///     optim::SGD opt({optim::SGD::Group{body->parameters()}, optim::ParamGroup{head_params, head}}, base);
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace anvil::nn::optim {

/// A group's hyper-parameters by name, as PyTorch's param_groups dicts hold
/// them ("lr", "weight_decay", ...); booleans are 0 or 1.
using HyperParams = std::vector<std::pair<std::string, double>>;

/// What an optimizer keeps for one parameter between steps.
struct ParamState {
  int64_t step = 0;  ///< updates applied so far
  std::map<std::string, Tensor> buffers;  ///< "exp_avg", "exp_avg_sq", "momentum_buffer"
  /// Host-side numbers (NAdam's mu_product, LBFGS's counters), kept in double
  /// as PyTorch keeps them in CPU scalars: reading them needs no device sync.
  std::map<std::string, double> scalars;
};

/// A snapshot of an optimizer (tensors are copies, so training on does not
/// change it). Parameters are numbered in group order, as PyTorch numbers them.
struct OptimizerState {
  /// One parameter group of the snapshot.
  struct Group {
    std::vector<int64_t> params;  ///< indices of the group's parameters
    HyperParams hyper_params;  ///< including the current lr
  };
  std::map<int64_t, ParamState> state;  ///< only parameters that were stepped
  std::vector<Group> param_groups;  ///< the groups, in order
};

/// The snapshot as flat name -> tensor pairs, ready for a checkpoint file:
///
///     state.<i>.step (int64 scalar), state.<i>.<buffer>, state.<i>.scalars.<name> (float64 scalar),
///     param_groups.<g>.params (int64 [n]), param_groups.<g>.<name> (float64 scalar).
StateDict flatten(const OptimizerState& state);
OptimizerState unflatten(const StateDict& flat);  ///< errors name the bad key

/// The base of every optimizer: parameter groups with their own hyper-parameters, per-parameter state, and a state_dict
/// that resumes training exactly.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient (others are skipped).
  virtual void step() = 0;
  /// set_to_none frees the gradients (the next backward allocates fresh ones);
  /// otherwise they are filled with zeros.
  void zero_grad(bool set_to_none = true);

  const std::string& name() const { return name_; }  ///< "SGD", "Adam", ...
  size_t num_param_groups() const { return group_params_.size(); }  ///< Number of parameter groups.
  const std::vector<Tensor>& params(size_t group) const;  ///< The parameters of group `group`.
  std::vector<Tensor> parameters() const;  ///< all groups, in order

  /// The learning rate of a group; what LR schedulers read and write.
  virtual double lr(size_t group = 0) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;  ///< Sets group `group`'s learning rate (what LR schedulers call).
  void set_lr(double lr);  ///< every group

  /// Group `group`'s hyper-parameters by name, the lr included.
  virtual HyperParams hyper_params(size_t group) const = 0;

  /// libtorch's opt.param_groups()[g].options().get_lr() / .set_lr(lr) and
  /// .params(): a view of group g that reads and writes this optimizer.
  class ParamGroupView {
   public:
    /// libtorch's param_groups()[g].options(): the group's learning rate, read and written through the optimizer.
    class Options {
     public:
      double get_lr() const { return opt_->lr(group_); }  ///< The group's learning rate.
      /// Sets the group's learning rate; returns this for chaining.
      Options& set_lr(double lr) {
        opt_->set_lr(group_, lr);
        return *this;
      }

     private:
      friend class ParamGroupView;
      Options(Optimizer* opt, size_t group) : opt_(opt), group_(group) {}
      Optimizer* opt_;
      size_t group_;
    };
    Options options() const { return {opt_, group_}; }  ///< The group's options view.
    const std::vector<Tensor>& params() const { return opt_->params(group_); }  ///< The group's parameters.

   private:
    friend class Optimizer;
    ParamGroupView(Optimizer* opt, size_t group) : opt_(opt), group_(group) {}
    Optimizer* opt_;
    size_t group_;
  };
  /// libtorch's param_groups(): a view of each group (its params and its lr).
  std::vector<ParamGroupView> param_groups() {
    std::vector<ParamGroupView> out;
    for (size_t g = 0; g < num_param_groups(); ++g) out.push_back(ParamGroupView(this, g));
    return out;
  }

  /// Each group's lr before any LR scheduler changed it (PyTorch's
  /// group["initial_lr"]): set by the first scheduler made over this
  /// optimizer, read by every later one as its base lr, so several schedulers
  /// (SequentialLR, ChainedScheduler) start from the same values.
  const std::vector<double>& initial_lrs() const { return initial_lrs_; }
  /// Sets initial_lrs(), one per group (what the first scheduler over the optimizer records).
  void set_initial_lrs(std::vector<double> lrs);

  /// The state of one parameter (nullptr if it has not been stepped yet).
  const ParamState* state_of(const Tensor& param) const;
  /// The same, created empty on first use (as PyTorch's optimizer.state[p]).
  ParamState& state_for(const Tensor& param) { return state_[param.impl()]; }

  /// A copy of the state and the groups' hyper-parameters (PyTorch's optimizer.state_dict()).
  OptimizerState state_dict() const;
  /// Restores hyper-parameters (lr included) and per-parameter state into an
  /// optimizer built over the same parameters in the same groups: the number
  /// of groups, of parameters per group and the state shapes must match.
  /// State tensors are copied to each parameter's device and dtype.
  void load_state_dict(const OptimizerState& state);

 protected:
  /// A base named `name` ("SGD", "Adam", ...) in errors and state dicts.
  explicit Optimizer(std::string name) : name_(std::move(name)) {}
  /// Whether state buffer `key` has its parameter's shape (checked on load).
  /// LBFGS keeps flat vectors over all parameters instead.
  virtual bool buffer_shaped_like_param(const std::string& key) const {
    (void)key;
    return true;
  }
  /// Checks the parameters (defined, leaves, require grad, in no other group)
  /// and appends them as a new group.
  void add_group_params(std::vector<Tensor> params);
  /// The group's options with `values` applied, validated; throws without
  /// changing anything if a name is unknown or a value invalid. set applies.
  virtual void check_hyper_params(size_t group, const HyperParams& values) const = 0;
  /// Applies values check_hyper_params accepted to group `group`.
  virtual void set_hyper_params(size_t group, const HyperParams& values) = 0;

 private:
  std::string name_;
  std::vector<std::vector<Tensor>> group_params_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
  std::vector<double> initial_lrs_;
};

/// A group of parameters with optional settings of its own.
template <class Options> struct ParamGroup {
  /// The parameters `p`, with their own options or (nullopt) the optimizer's defaults.
  ParamGroup(std::vector<Tensor> p, std::optional<Options> o = std::nullopt)
      : params(std::move(p)), options(std::move(o)) {}
  std::vector<Tensor> params;  ///< the group's parameters
  std::optional<Options> options;  ///< unset: the optimizer's defaults
};
/// ParamGroup{params, options} deduces the options type.
template <class Options> ParamGroup(std::vector<Tensor>, Options) -> ParamGroup<Options>;

/// The typed part every optimizer shares: groups of `Options`. Options are
/// aggregates with `double lr`, validate(optimizer name), named() -> HyperParams
/// and set_named(name, value) -> bool (false for an unknown name).
template <class Options> class OptimizerWith : public Optimizer {
 public:
  using Group = ParamGroup<Options>;  ///< A parameter group of this optimizer's options.

  /// Adds a group (without options it takes the defaults), validating its options.
  void add_param_group(Group group) {
    Options options = group.options.value_or(defaults_);
    options.validate(name());
    add_group_params(std::move(group.params));
    options_.push_back(options);
  }
  const Options& defaults() const { return defaults_; }  ///< The options groups without their own take.
  /// Group `group`'s options, to change (lr, weight_decay, ...) between steps.
  Options& options(size_t group) { return options_[checked_group(group)]; }
  const Options& options(size_t group) const { return options_[checked_group(group)]; }  ///< Group `group`'s options.

  double lr(size_t group = 0) const override { return options(group).lr; }  ///< Group `group`'s learning rate.
  using Optimizer::set_lr;  ///< set_lr(double) for every group.
  /// Sets group `group`'s learning rate (finite and non-negative).
  void set_lr(size_t group, double lr) override {
    ANVIL_CHECK(std::isfinite(lr) && lr >= 0, name(), ".set_lr: invalid learning rate ", lr, " for group ", group);
    options(group).lr = lr;
  }
  /// Group `group`'s hyper-parameters by name (Options::named()).
  HyperParams hyper_params(size_t group) const override { return options(group).named(); }

 protected:
  /// Validates `defaults` and adds `groups` (each without options takes the defaults).
  OptimizerWith(std::string name, std::vector<Group> groups, Options defaults)
      : Optimizer(std::move(name)), defaults_(defaults) {
    defaults_.validate(this->name());
    ANVIL_CHECK(!groups.empty(), this->name(), ": got no parameter groups");
    for (auto& g : groups) add_param_group(std::move(g));
  }
  /// Throws if `values` do not fit group `group`'s options (unknown names, invalid values).
  void check_hyper_params(size_t group, const HyperParams& values) const override { (void)applied(group, values); }
  /// Sets group `group`'s options from `values` (validated).
  void set_hyper_params(size_t group, const HyperParams& values) override { options(group) = applied(group, values); }

 private:
  size_t checked_group(size_t group) const {
    ANVIL_CHECK(group < options_.size(), name(), ": parameter group ", group, " does not exist (there are ",
                options_.size(), ")");
    return group;
  }
  Options applied(size_t group, const HyperParams& values) const {
    Options o = options(group);
    for (const auto& [key, value] : values)
      ANVIL_CHECK(o.set_named(key, value), name(), ".load_state_dict: unknown hyper-parameter '", key, "' in group ",
                  group, " (a state from another optimizer type?)");
    o.validate(name());
    return o;
  }

  Options defaults_;
  std::vector<Options> options_;
};

}  // namespace anvil::nn::optim
