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

struct LBFGSOptions {
  using OptionalInt = std::optional<int64_t>;
  using OptionalString = std::optional<std::string>;
  ANVIL_OPTION(LBFGSOptions, double, lr) = 1.0;
  ANVIL_OPTION(LBFGSOptions, int64_t, max_iter) = 20;
  ANVIL_OPTION(LBFGSOptions, OptionalInt, max_eval) = std::nullopt;  ///< unset: max_iter * 5 / 4
  ANVIL_OPTION(LBFGSOptions, double, tolerance_grad) = 1e-7;
  ANVIL_OPTION(LBFGSOptions, double, tolerance_change) = 1e-9;
  ANVIL_OPTION(LBFGSOptions, int64_t, history_size) = 100;
  ANVIL_OPTION(LBFGSOptions, OptionalString, line_search_fn) = std::nullopt;  ///< or "strong_wolfe"

  void validate(const std::string& optimizer) const;
  HyperParams named() const;
  bool set_named(std::string_view name, double value);
};

using LossClosure = std::function<Tensor()>;

class LBFGS : public OptimizerWith<LBFGSOptions> {
 public:
  explicit LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});
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
