#include "nn/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/ops/elementwise.h"
#include "core/ops/linalg.h"
#include "core/ops/shape.h"
#include "core/factory.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void LBFGSOptions::validate(const std::string& optimizer) const {
  internal::check_lr(optimizer, lr);
  ANVIL_CHECK(max_iter >= 1, optimizer, ": max_iter must be >= 1, got ", max_iter);
  ANVIL_CHECK(!max_eval.has_value() || *max_eval >= 1, optimizer, ": max_eval must be >= 1, got ",
              max_eval.value_or(0));
  internal::check_non_negative(optimizer, "tolerance_grad", tolerance_grad);
  internal::check_non_negative(optimizer, "tolerance_change", tolerance_change);
  ANVIL_CHECK(history_size >= 1, optimizer, ": history_size must be >= 1, got ", history_size);
  ANVIL_CHECK(!line_search_fn.has_value() || *line_search_fn == "strong_wolfe", optimizer,
              ": only 'strong_wolfe' is supported as line_search_fn, got '", line_search_fn.value_or(""), "'");
}

HyperParams LBFGSOptions::named() const {
  return {{"lr", lr},
          {"max_iter", static_cast<double>(max_iter)},
          {"max_eval", static_cast<double>(max_eval.value_or(max_iter * 5 / 4))},
          {"tolerance_grad", tolerance_grad},
          {"tolerance_change", tolerance_change},
          {"history_size", static_cast<double>(history_size)},
          {"strong_wolfe", line_search_fn.has_value() ? 1.0 : 0.0}};
}

bool LBFGSOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "max_iter")
    max_iter = static_cast<int64_t>(value);
  else if (name == "max_eval")
    max_eval = static_cast<int64_t>(value);
  else if (name == "tolerance_grad")
    tolerance_grad = value;
  else if (name == "tolerance_change")
    tolerance_change = value;
  else if (name == "history_size")
    history_size = static_cast<int64_t>(value);
  else if (name == "strong_wolfe")
    line_search_fn = value != 0 ? std::optional<std::string>("strong_wolfe") : std::nullopt;
  else
    return false;
  return true;
}

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options)
    : LBFGS(std::vector<Group>{Group(std::move(params))}, options) {}

LBFGS::LBFGS(std::vector<Group> groups, LBFGSOptions defaults) : OptimizerWith("LBFGS", std::move(groups), defaults) {
  ANVIL_CHECK(num_param_groups() == 1, "LBFGS doesn't support per-parameter options (parameter groups); got ",
              num_param_groups(), " groups");
  const std::vector<Tensor>& ps = params(0);
  for (const Tensor& p : ps)
    ANVIL_CHECK(p.device() == ps[0].device() && p.dtype() == ps[0].dtype(),
                "LBFGS: every parameter must share "
                "one device and dtype (it works on them as one flat vector); got ",
                anvil::detail::describe(ps[0]), " and ", anvil::detail::describe(p));
}

bool LBFGS::buffer_shaped_like_param(const std::string& key) const {
  (void)key;
  return false;
}

void LBFGS::step() {
  fail(
      "LBFGS.step: L-BFGS re-evaluates the loss several times per step; call step(closure) with a closure that "
      "clears the gradients, computes the loss, calls backward and returns the loss");
}

Tensor LBFGS::flat_grad() const {
  std::vector<Tensor> parts;
  for (const Tensor& p : params(0)) {
    const Tensor g = p.grad();
    parts.push_back(g.defined() ? g.detach().to(p.dtype()).reshape({-1}) : zeros({p.numel()}, p.options()));
  }
  return cat(parts, 0);
}

void LBFGS::add_direction(double t, const Tensor& d) {
  int64_t offset = 0;
  for (Tensor p : params(0)) {
    const int64_t n = p.numel();
    p.add_(d.slice(0, offset, offset + n).view(p.shape()), t);
    offset += n;
  }
}

std::vector<Tensor> LBFGS::clone_params() const {
  std::vector<Tensor> out;
  for (const Tensor& p : params(0)) out.push_back(p.detach().clone());
  return out;
}

void LBFGS::set_params(const std::vector<Tensor>& values) {
  const std::vector<Tensor>& ps = params(0);
  for (size_t i = 0; i < ps.size(); ++i) Tensor(ps[i]).copy_(values[i]);
}

namespace {

double call_closure(const LossClosure& closure) {
  EnableGradGuard grad;
  Tensor loss = closure();
  ANVIL_CHECK(loss.defined() && loss.numel() == 1, "LBFGS.step: the closure must return the scalar loss, got ",
              loss.defined() ? loss.shape_str() : std::string("an undefined tensor"));
  return loss.item<double>();
}

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }
double dot_value(const Tensor& a, const Tensor& b) { return dot(a, b).item<double>(); }

// PyTorch's _cubic_interpolate: the minimizer of the cubic through two points
// with their derivatives, clamped into the bounds.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2.0;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

}  // namespace

std::pair<double, Tensor> LBFGS::directional_evaluate(const LossClosure& closure, const std::vector<Tensor>& x,
                                                      double t, const Tensor& d) {
  add_direction(t, d);
  const double loss = call_closure(closure);
  Tensor g = flat_grad();
  set_params(x);
  return {loss, g};
}

// PyTorch's _strong_wolfe, step for step.
LBFGS::LineSearchResult LBFGS::strong_wolfe(const LossClosure& closure, double t, const Tensor& d, double f,
                                            const Tensor& g0, double gtd) {
  const double c1 = 1e-4, c2 = 0.9, tolerance_change = 1e-9;
  const int64_t max_ls = 25;
  const std::vector<Tensor> x = clone_params();
  const double d_norm = max_abs(d);
  Tensor g = g0.clone();
  auto [f_new, g_new] = directional_evaluate(closure, x, t, d);
  int64_t evals = 1;
  double gtd_new = dot_value(g_new, d);

  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Tensor> bracket_g;
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t}, bracket_f = {f_new}, bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10;
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::pair{min_step, max_step});
    t_prev = tmp, f_prev = f_new, g_prev = g_new.clone(), gtd_prev = gtd_new;
    std::tie(f_new, g_new) = directional_evaluate(closure, x, t, d);
    ++evals;
    gtd_new = dot_value(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) bracket = {0, t}, bracket_f = {f, f_new}, bracket_g = {g, g_new};

  // Zoom: shrink the bracket until the strong Wolfe conditions hold.
  bool insufficient_progress = false;
  size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    const double bmax = std::max(bracket[0], bracket[1]), bmin = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (bmax - bmin);
    if (std::min(bmax - t, t - bmin) < eps) {
      if (insufficient_progress || t >= bmax || t <= bmin) {
        t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = directional_evaluate(closure, x, t, d);
    ++evals;
    gtd_new = dot_value(g_new, d);
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      bracket[high] = t, bracket_f[high] = f_new, bracket_g[high] = g_new.clone(), bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1, high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low], bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low], bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t, bracket_f[low] = f_new, bracket_g[low] = g_new.clone(), bracket_gtd[low] = gtd_new;
    }
  }
  low = std::min(low, bracket.size() - 1);
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

Tensor LBFGS::step(const LossClosure& closure) {
  ANVIL_CHECK(closure != nullptr, "LBFGS.step: got an empty closure");
  NoGradGuard no_grad;
  const LBFGSOptions& o = options(0);
  const double lr = o.lr, tolerance_grad = o.tolerance_grad, tolerance_change = o.tolerance_change;
  const int64_t max_iter = o.max_iter, max_eval = o.max_eval.value_or(max_iter * 5 / 4);
  const auto history_size = static_cast<size_t>(o.history_size.value);
  ParamState& state = state_for(params(0)[0]);
  auto& sc = state.scalars;
  auto& buf = state.buffers;
  sc.try_emplace("func_evals", 0.0);
  sc.try_emplace("n_iter", 0.0);

  Tensor orig_loss;
  {
    EnableGradGuard grad;
    orig_loss = closure();
  }
  ANVIL_CHECK(orig_loss.defined() && orig_loss.numel() == 1, "LBFGS.step: the closure must return the scalar loss");
  double loss = orig_loss.item<double>();
  int64_t current_evals = 1;
  sc["func_evals"] += 1;
  ++state.step;

  Tensor g = flat_grad();
  if (max_abs(g) <= tolerance_grad) return orig_loss;

  // The history, as lists (PyTorch's old_dirs, old_stps, ro).
  size_t history = static_cast<size_t>(sc.count("history") ? sc["history"] : 0.0);
  std::vector<Tensor> old_dirs, old_stps;
  std::vector<double> ro;
  for (size_t i = 0; i < history; ++i) {
    old_dirs.push_back(buf.at("old_dirs." + std::to_string(i)));
    old_stps.push_back(buf.at("old_stps." + std::to_string(i)));
    ro.push_back(sc.at("ro." + std::to_string(i)));
  }
  Tensor d = buf.count("d") ? buf["d"] : Tensor();
  Tensor prev_flat_grad = buf.count("prev_flat_grad") ? buf["prev_flat_grad"] : Tensor();
  double t = sc.count("t") ? sc["t"] : 0.0;
  double h_diag = sc.count("H_diag") ? sc["H_diag"] : 1.0;
  double prev_loss = sc.count("prev_loss") ? sc["prev_loss"] : 0.0;

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    sc["n_iter"] += 1;
    if (sc["n_iter"] == 1) {
      d = neg(g);
      old_dirs.clear(), old_stps.clear(), ro.clear();
      h_diag = 1;
    } else {
      Tensor y = sub(g, prev_flat_grad);
      Tensor s = mul(d, Scalar(t));
      const double ys = dot_value(y, s);
      if (ys > 1e-10) {
        if (old_dirs.size() == history_size) {
          old_dirs.erase(old_dirs.begin()), old_stps.erase(old_stps.begin()), ro.erase(ro.begin());
        }
        old_dirs.push_back(y), old_stps.push_back(s), ro.push_back(1.0 / ys);
        h_diag = ys / dot_value(y, y);
      }
      // Two-loop recursion: d = -H g.
      const size_t num_old = old_dirs.size();
      std::vector<double> al(num_old);
      Tensor q = neg(g);
      for (size_t k = num_old; k-- > 0;) {
        al[k] = dot_value(old_stps[k], q) * ro[k];
        q.add_(old_dirs[k], -al[k]);
      }
      d = mul(q, Scalar(h_diag));
      for (size_t k = 0; k < num_old; ++k) {
        const double be_k = dot_value(old_dirs[k], d) * ro[k];
        d.add_(old_stps[k], al[k] - be_k);
      }
    }
    prev_flat_grad = g.clone();
    prev_loss = loss;

    t = sc["n_iter"] == 1 ? std::min(1.0, 1.0 / g.abs().sum().item<double>()) * lr : lr;
    const double gtd = dot_value(g, d);
    if (gtd > -tolerance_change) break;

    int64_t ls_func_evals = 0;
    bool opt_cond = false;
    if (o.line_search_fn.has_value()) {
      LineSearchResult r = strong_wolfe(closure, t, d, loss, g, gtd);
      loss = r.loss, g = r.flat_grad, t = r.t, ls_func_evals = r.func_evals;
      add_direction(t, d);
      opt_cond = max_abs(g) <= tolerance_grad;
    } else {
      add_direction(t, d);
      if (n_iter != max_iter) {
        loss = call_closure(closure);
        g = flat_grad();
        opt_cond = max_abs(g) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    sc["func_evals"] += static_cast<double>(ls_func_evals);

    if (n_iter == max_iter || current_evals >= max_eval || opt_cond) break;
    if (max_abs(d) * std::abs(t) <= tolerance_change) break;
    if (std::abs(loss - prev_loss) < tolerance_change) break;
  }

  // Back into the state (flat tensors and host numbers).
  for (size_t i = 0; i < history; ++i) {
    buf.erase("old_dirs." + std::to_string(i)), buf.erase("old_stps." + std::to_string(i));
    sc.erase("ro." + std::to_string(i));
  }
  for (size_t i = 0; i < old_dirs.size(); ++i) {
    buf["old_dirs." + std::to_string(i)] = old_dirs[i];
    buf["old_stps." + std::to_string(i)] = old_stps[i];
    sc["ro." + std::to_string(i)] = ro[i];
  }
  sc["history"] = static_cast<double>(old_dirs.size());
  if (d.defined()) buf["d"] = d;
  if (prev_flat_grad.defined()) buf["prev_flat_grad"] = prev_flat_grad;
  sc["t"] = t, sc["H_diag"] = h_diag, sc["prev_loss"] = prev_loss;
  return orig_loss;
}

}  // namespace anvil::nn::optim
