#pragma once
/// @file
/// L-BFGS, torch.optim.LBFGS: each step(closure) runs up to max_iter
/// iterations of limited-memory BFGS over all parameters as one flat vector,
/// re-evaluating the loss through the closure. The closure clears the
/// gradients, computes the loss, calls backward and returns the loss:
///
///     optim::LBFGS opt(model->parameters(), optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
///     auto closure = [&] { opt.zero_grad(); Tensor loss = f(); loss.backward(); return loss; };
///     for (int i = 0; i < 10; ++i) opt.step(closure);
///
/// As PyTorch's: one parameter group, parameters of one device and dtype; the
/// first direction is -g scaled by min(1, 1 / |g|_1) * lr, later ones come from
/// the two-loop recursion over the last history_size (s, y) pairs; with
/// line_search_fn "strong_wolfe" the step length satisfies the strong Wolfe
/// conditions (cubic interpolation, c1 = 1e-4, c2 = 0.9), else it is lr.
/// State (kept with the first parameter, as PyTorch): buffers "d",
/// "prev_flat_grad", `"old_dirs.<i>"`, `"old_stps.<i>"` (flat vectors) and the
/// scalars func_evals, n_iter, t, H_diag, prev_loss, history, `ro.<i>`.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// LBFGS's hyper-parameters, with PyTorch's defaults (as libtorch's optim::LBFGSOptions).
struct LBFGSOptions {
  using OptionalInt = std::optional<int64_t>;  ///< An optional count (ANVIL_OPTION's type may hold no comma).
  using OptionalString = std::optional<std::string>;  ///< An optional name.
  ANVIL_OPTION(LBFGSOptions, double, lr) = 1.0;  ///< learning rate
  ANVIL_OPTION(LBFGSOptions, int64_t, max_iter) = 20;  ///< iterations per step()
  ANVIL_OPTION(LBFGSOptions, OptionalInt, max_eval) = std::nullopt;  ///< unset: max_iter * 5 / 4
  /// stop when the largest gradient magnitude is at most this
  ANVIL_OPTION(LBFGSOptions, double, tolerance_grad) = 1e-7;
  ANVIL_OPTION(LBFGSOptions, double,
               tolerance_change) = 1e-9;  ///< stop when the loss or a step changes by at most this
  ANVIL_OPTION(LBFGSOptions, int64_t, history_size) = 100;  ///< (s, y) pairs kept for the Hessian approximation
  ANVIL_OPTION(LBFGSOptions, OptionalString, line_search_fn) = std::nullopt;  ///< or "strong_wolfe"

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Re-evaluates the model: zeroes the gradients, computes the loss, runs backward and returns the loss.
using LossClosure = std::function<Tensor()>;

/// L-BFGS, as torch.optim.LBFGS: a quasi-Newton method that re-evaluates the loss through a closure (see the file
/// comment).
class LBFGS : public OptimizerWith<LBFGSOptions> {
 public:
  explicit LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit LBFGS(std::vector<Group> groups, LBFGSOptions defaults = {});
  /// Returns the loss of the first closure call (before this step's updates).
  Tensor step(const LossClosure& closure);
  /// L-BFGS re-evaluates the loss: step() without a closure is an error.
  void step() override;

 protected:
  bool buffer_shaped_like_param(const std::string& key) const override;

 private:
  Tensor flat_grad() const;
  void add_direction(double t, const Tensor& d);  ///< params += t * d
  std::vector<Tensor> clone_params() const;
  void set_params(const std::vector<Tensor>& values);
  /// Loss and flat gradient at params + t * d, then back to x.
  std::pair<double, Tensor> directional_evaluate(const LossClosure& closure, const std::vector<Tensor>& x, double t,
                                                 const Tensor& d);
  struct LineSearchResult {
    double loss;
    Tensor flat_grad;
    double t;
    int64_t func_evals;
  };
  LineSearchResult strong_wolfe(const LossClosure& closure, double t, const Tensor& d, double loss,
                                const Tensor& flat_grad, double gtd);
};

}  // namespace anvil::nn::optim
