#include "nn/optim/optimizer.h"

#include <charconv>
#include <set>

#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"

namespace anvil::nn::optim {

void Optimizer::add_group_params(std::vector<Tensor> params) {
  ANVIL_CHECK(!params.empty(), name_, ": parameter group ", group_params_.size(), " is empty");
  std::set<const TensorImpl*> seen;
  for (size_t g = 0; g < group_params_.size(); ++g)
    for (const Tensor& p : group_params_[g]) seen.insert(p.impl());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const size_t group = group_params_.size();
    ANVIL_CHECK(p.defined(), name_, ": parameter ", i, " of group ", group, " is an undefined tensor");
    ANVIL_CHECK(p.is_floating_point(), name_, ": parameter ", i, " of group ", group, " must be floating point, got ",
                detail::describe(p));
    ANVIL_CHECK(p.requires_grad(), name_, ": parameter ", i, " of group ", group, " (", detail::describe(p),
                ") does not require grad; call requires_grad_() or leave it out");
    ANVIL_CHECK(p.is_leaf(), name_, ": parameter ", i, " of group ", group, " (", detail::describe(p),
                ") is not a leaf tensor; optimize the tensor it was computed from");
    ANVIL_CHECK(seen.insert(p.impl()).second, name_, ": parameter ", i, " of group ", group, " (", detail::describe(p),
                ") already appears in this or another parameter group");
  }
  group_params_.push_back(std::move(params));
}

const std::vector<Tensor>& Optimizer::params(size_t group) const {
  ANVIL_CHECK(group < group_params_.size(), name_, ": parameter group ", group, " does not exist (there are ",
              group_params_.size(), ")");
  return group_params_[group];
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> all;
  for (const auto& g : group_params_) all.insert(all.end(), g.begin(), g.end());
  return all;
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < num_param_groups(); ++g) set_lr(g, lr);
}

void Optimizer::set_initial_lrs(std::vector<double> lrs) {
  ANVIL_CHECK(lrs.size() == num_param_groups(), name_, ".set_initial_lrs: got ", lrs.size(), " lrs for ",
              num_param_groups(), " parameter groups");
  initial_lrs_ = std::move(lrs);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const auto& group : group_params_)
    for (const Tensor& p : group) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none)
        p.set_grad(Tensor());
      else
        g.zero_();
    }
}

const ParamState* Optimizer::state_of(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  int64_t index = 0;
  for (size_t g = 0; g < group_params_.size(); ++g) {
    OptimizerState::Group group{{}, hyper_params(g)};
    for (const Tensor& p : group_params_[g]) {
      group.params.push_back(index);
      if (const ParamState* s = state_of(p)) {
        ParamState copy{s->step, {}, s->scalars};
        for (const auto& [key, t] : s->buffers) copy.buffers[key] = t.detach().clone();
        out.state[index] = std::move(copy);
      }
      ++index;
    }
    out.param_groups.push_back(std::move(group));
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  const char* op = ".load_state_dict";
  ANVIL_CHECK(state.param_groups.size() == group_params_.size(), name_, op, ": the state has ",
              state.param_groups.size(), " parameter groups, this optimizer has ", group_params_.size());
  // Saved parameter index -> our parameter; everything is checked before anything changes.
  std::map<int64_t, Tensor> by_index;
  for (size_t g = 0; g < group_params_.size(); ++g) {
    const auto& saved = state.param_groups[g];
    ANVIL_CHECK(saved.params.size() == group_params_[g].size(), name_, op, ": group ", g, " of the state has ",
                saved.params.size(), " parameters, this optimizer's has ", group_params_[g].size());
    for (size_t i = 0; i < saved.params.size(); ++i)
      ANVIL_CHECK(by_index.emplace(saved.params[i], group_params_[g][i]).second, name_, op, ": parameter index ",
                  saved.params[i], " appears twice in the state's groups");
    check_hyper_params(g, saved.hyper_params);
  }
  for (const auto& [index, s] : state.state) {
    auto it = by_index.find(index);
    ANVIL_CHECK(it != by_index.end(), name_, op, ": the state has an entry for parameter ", index,
                " which no group lists");
    ANVIL_CHECK(s.step >= 0, name_, op, ": parameter ", index, " has a negative step count ", s.step);
    for (const auto& [key, t] : s.buffers) {
      ANVIL_CHECK(t.defined(), name_, op, ": state '", key, "' of parameter ", index, " is undefined");
      ANVIL_CHECK(!buffer_shaped_like_param(key) || t.shape() == it->second.shape(), name_, op, ": state '", key,
                  "' of parameter ", index, " has shape ", t.shape_str(), " but the parameter has shape ",
                  it->second.shape_str());
    }
  }

  NoGradGuard no_grad;
  for (size_t g = 0; g < group_params_.size(); ++g) set_hyper_params(g, state.param_groups[g].hyper_params);
  state_.clear();
  for (const auto& [index, s] : state.state) {
    const Tensor& p = by_index.at(index);
    ParamState copy{s.step, {}, s.scalars};
    // clone: training on must not write into the caller's state.
    for (const auto& [key, t] : s.buffers)
      copy.buffers[key] = t.detach().to(p.device(), p.dtype()).clone().contiguous();
    state_[p.impl()] = std::move(copy);
  }
}

// ---------------------------------------------------------------- flat form

StateDict flatten(const OptimizerState& state) {
  StateDict out;
  for (const auto& [index, s] : state.state) {
    const std::string prefix = "state." + std::to_string(index) + ".";
    out.emplace_back(prefix + "step", scalar_tensor(Scalar(s.step), kInt64));
    for (const auto& [key, t] : s.buffers) out.emplace_back(prefix + key, t);
    for (const auto& [key, v] : s.scalars)
      out.emplace_back(prefix + "scalars." + key, scalar_tensor(Scalar(v), kFloat64));
  }
  for (size_t g = 0; g < state.param_groups.size(); ++g) {
    const auto& group = state.param_groups[g];
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    out.emplace_back(prefix + "params", from_vector(group.params, {static_cast<int64_t>(group.params.size())}, kInt64));
    for (const auto& [key, value] : group.hyper_params)
      out.emplace_back(prefix + key, scalar_tensor(Scalar(value), kFloat64));
  }
  return out;
}

namespace {

// "state.12.exp_avg" -> (12, "exp_avg") after the given prefix.
std::pair<int64_t, std::string> split_index(const std::string& key, size_t prefix_len) {
  const size_t dot = key.find('.', prefix_len);
  int64_t index = -1;
  const char* first = key.data() + prefix_len;
  const char* last = key.data() + (dot == std::string::npos ? key.size() : dot);
  auto [ptr, ec] = std::from_chars(first, last, index);
  ANVIL_CHECK(ec == std::errc() && ptr == last && index >= 0 && dot != std::string::npos && dot + 1 < key.size(),
              "optim::unflatten: malformed key '", key, "' (expected state.<i>.<name> or param_groups.<g>.<name>)");
  return {index, key.substr(dot + 1)};
}

}  // namespace

OptimizerState unflatten(const StateDict& flat) {
  OptimizerState out;
  std::map<int64_t, OptimizerState::Group> groups;
  const std::string state_prefix = "state.", group_prefix = "param_groups.";
  for (const auto& [key, t] : flat) {
    ANVIL_CHECK(t.defined(), "optim::unflatten: tensor '", key, "' is undefined");
    if (key.rfind(state_prefix, 0) == 0) {
      auto [index, name] = split_index(key, state_prefix.size());
      ParamState& s = out.state[index];
      if (name == "step") {
        ANVIL_CHECK(t.numel() == 1, "optim::unflatten: '", key, "' must hold one value, has shape ", t.shape_str());
        s.step = t.item<int64_t>();
      } else if (name.rfind("scalars.", 0) == 0) {
        ANVIL_CHECK(t.numel() == 1, "optim::unflatten: '", key, "' must hold one value, has shape ", t.shape_str());
        s.scalars[name.substr(8)] = t.item<double>();
      } else {
        s.buffers[name] = t;
      }
    } else if (key.rfind(group_prefix, 0) == 0) {
      auto [index, name] = split_index(key, group_prefix.size());
      OptimizerState::Group& g = groups[index];
      if (name == "params") {
        ANVIL_CHECK(t.dim() == 1, "optim::unflatten: '", key, "' must be 1-D, has shape ", t.shape_str());
        g.params = t.to_vector<int64_t>();
      } else {
        ANVIL_CHECK(t.numel() == 1, "optim::unflatten: '", key, "' must hold one value, has shape ", t.shape_str());
        g.hyper_params.emplace_back(name, t.item<double>());
      }
    } else {
      fail("optim::unflatten: unexpected key '", key, "' (expected state.* or param_groups.*)");
    }
  }
  int64_t expected = 0;
  for (auto& [index, g] : groups) {
    ANVIL_CHECK(index == expected, "optim::unflatten: param_groups.", expected, " is missing");
    out.param_groups.push_back(std::move(g));
    ++expected;
  }
  return out;
}

}  // namespace anvil::nn::optim
