#include "nn/layers/rnn.h"

#include <cmath>
#include <sstream>

#include "core/factory.h"
#include "core/ops.h"
#include "nn/init.h"

namespace anvil::nn {

namespace {
std::string describe(const Tensor& t) { return t.defined() ? t.shape_str() : std::string("undefined"); }
}  // namespace

RNNBase::RNNBase(const char* name, int64_t gates, const RNNOptionsBase& o) : Module(name), options(o) {
  ANVIL_CHECK(o.input_size > 0 && o.hidden_size > 0 && o.num_layers > 0, name,
              ": expected input_size, hidden_size and num_layers > 0, got ", o.input_size, ", ", o.hidden_size, ", ",
              o.num_layers);
  ANVIL_CHECK(o.dropout >= 0 && o.dropout < 1, name, ": expected dropout in [0, 1), got ", o.dropout);
  const int64_t h = o.hidden_size;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    for (int64_t d = 0; d < directions(); ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      const int64_t in = layer == 0 ? o.input_size() : h * directions();
      Weights w;
      w.w_ih = register_parameter("weight_ih" + suffix, empty({gates * h, in}));
      w.w_hh = register_parameter("weight_hh" + suffix, empty({gates * h, h}));
      if (o.bias) {
        w.b_ih = register_parameter("bias_ih" + suffix, empty({gates * h}));
        w.b_hh = register_parameter("bias_hh" + suffix, empty({gates * h}));
      }
      weights_.push_back(w);
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.hidden_size));
  for (Tensor& p : parameters()) init::uniform_(p, -bound, bound);
}

const RNNBase::Weights& RNNBase::weights(int64_t layer, int64_t direction) const {
  ANVIL_CHECK(layer >= 0 && layer < options.num_layers && direction >= 0 && direction < directions(), type_name(),
              ": no layer ", layer, " direction ", direction, " (", options.num_layers, " layers, ", directions(),
              " directions)");
  return weights_[static_cast<size_t>(layer * directions() + direction)];
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                                bool has_cell) {
  const char* name = type_name().c_str();
  const int64_t hs = options.hidden_size, dirs = directions(), states = options.num_layers * dirs;
  const std::string layout = options.batch_first ? "[N, L, " : "[L, N, ";
  ANVIL_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 2) && input.size(-1) == options.input_size, name,
              ": expected input ", layout, options.input_size, "] (or unbatched [L, ", options.input_size, "]), got ",
              describe(input));
  const bool batched = input.dim() == 3;
  Tensor x = !batched ? input.unsqueeze(1) : options.batch_first ? input.transpose(0, 1) : input;  // [L, N, in]
  const int64_t len = x.size(0), n = x.size(1);
  auto initial = [&](const Tensor& s, const char* what) {
    if (!s.defined()) return zeros({states, n, hs}, x.options());
    const bool ok = batched ? s.dim() == 3 && s.size(0) == states && s.size(1) == n && s.size(2) == hs
                            : s.dim() == 2 && s.size(0) == states && s.size(1) == hs;
    ANVIL_CHECK(ok, name, ": expected ", what, " [num_layers * num_directions, N, hidden_size] = [", states, ", ",
                batched ? std::to_string(n) + ", " : std::string(), hs, "], got ", s.shape_str(),
                " (batch_first does not apply to the states)");
    return batched ? s : s.unsqueeze(1);
  };
  Tensor h_init = initial(h0, "h_0"), c_init = has_cell ? initial(c0, "c_0") : Tensor();

  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = x;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const Weights& w = weights(layer, d);
      // The input-to-hidden products of every step in one matmul.
      Tensor x_proj = linear(layer_input, w.w_ih, w.b_ih);
      Tensor h = h_init[layer * dirs + d], c = has_cell ? c_init[layer * dirs + d] : Tensor();
      std::vector<Tensor> steps(static_cast<size_t>(len));
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = d == 0 ? s : len - 1 - s;
        std::tie(h, c) = cell(w, x_proj[t], h, c);
        steps[static_cast<size_t>(t)] = h;
      }
      outs.push_back(len > 0 ? stack(steps, 0) : zeros({0, n, hs}, x.options()));
      h_n.push_back(h);
      if (has_cell) c_n.push_back(c);
    }
    layer_input = dirs == 2 ? cat(outs, -1) : outs[0];
    if (layer + 1 < options.num_layers && options.dropout > 0 && is_training())
      layer_input = dropout(layer_input, options.dropout, true);
  }
  Tensor out = !batched ? layer_input.squeeze(1) : options.batch_first ? layer_input.transpose(0, 1) : layer_input;
  Tensor h_last = stack(h_n, 0), c_last = has_cell ? stack(c_n, 0) : Tensor();
  if (!batched) {
    h_last = h_last.squeeze(1);
    if (has_cell) c_last = c_last.squeeze(1);
  }
  return {out, h_last, c_last};
}

std::string RNNBase::extra_repr() const {
  std::ostringstream os;
  os << options.input_size << ", " << options.hidden_size;
  if (options.num_layers != 1) os << ", num_layers=" << options.num_layers;
  if (!options.bias) os << ", bias=False";
  if (options.batch_first) os << ", batch_first=True";
  if (options.dropout > 0) os << ", dropout=" << options.dropout;
  if (options.bidirectional) os << ", bidirectional=True";
  return os.str();
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(const Tensor& input,
                                                             std::optional<std::tuple<Tensor, Tensor>> hx) {
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  ANVIL_CHECK(h0.defined() == c0.defined(), "LSTM: expected h_0 and c_0 together, got h_0 ", describe(h0), ", c_0 ",
              describe(c0));
  auto [out, h, c] = run(input, h0, c0, true);
  return {out, {h, c}};
}

Tensor LSTM::forward_inputs(const std::vector<Tensor>& in) {
  ANVIL_CHECK(in.size() == 1 || in.size() == 3, "LSTM: forward_inputs takes {input} or {input, h_0, c_0}, got ",
              in.size(), " inputs");
  if (in.size() == 1) return std::get<0>(forward(in[0]));
  return std::get<0>(forward(in[0], std::tuple<Tensor, Tensor>{in[1], in[2]}));
}

std::pair<Tensor, Tensor> LSTM::cell(const Weights& w, const Tensor& x_proj, const Tensor& h, const Tensor& c) const {
  std::vector<Tensor> g = chunk(add(x_proj, linear(h, w.w_hh, w.b_hh)), 4, 1);  // i, f, g, o
  Tensor c_next = add(mul(sigmoid(g[1]), c), mul(sigmoid(g[0]), tanh(g[2])));
  return {mul(sigmoid(g[3]), tanh(c_next)), c_next};
}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& hx) {
  auto [out, h, c] = run(input, hx, Tensor(), false);
  return {out, h};
}

Tensor GRU::forward_inputs(const std::vector<Tensor>& in) {
  ANVIL_CHECK(in.size() == 1 || in.size() == 2, "GRU: forward_inputs takes {input} or {input, h_0}, got ", in.size(),
              " inputs");
  return std::get<0>(forward(in[0], in.size() == 2 ? in[1] : Tensor()));
}

std::pair<Tensor, Tensor> GRU::cell(const Weights& w, const Tensor& x_proj, const Tensor& h, const Tensor&) const {
  std::vector<Tensor> xg = chunk(x_proj, 3, 1), hg = chunk(linear(h, w.w_hh, w.b_hh), 3, 1);  // r, z, n
  Tensor r = sigmoid(add(xg[0], hg[0])), z = sigmoid(add(xg[1], hg[1]));
  Tensor n = tanh(add(xg[2], mul(r, hg[2])));
  return {add(n, mul(z, sub(h, n))), Tensor()};  // (1 - z) * n + z * h
}

}  // namespace anvil::nn
