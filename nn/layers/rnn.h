#pragma once
/// @file
/// Recurrent layers, as torch.nn.LSTM and torch.nn.GRU: multi-layer,
/// optionally bidirectional, batch_first, dropout between layers, PyTorch's
/// gate order (LSTM: input, forget, cell, output; GRU: reset, update, new) and
/// parameter names (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, then
/// the "_reverse" ones of a bidirectional layer), so PyTorch state dicts load.
///
///     nn::LSTM lstm(nn::LSTMOptions(16, 32).num_layers(2).batch_first(true).dropout(0.1));
///     auto [out, state] = lstm.forward(x);           // out [N, L, 32]
///     auto [h_n, c_n] = state;                       // [2, N, 32] each
///     nn::GRU gru(nn::GRUOptions(16, 32).bidirectional(true));
///     auto [y, h] = gru.forward(x, h0);              // y [L, N, 64], h [2, N, 32]
///
/// Each layer projects the whole sequence's inputs with one matmul, then steps
/// through time with the hidden-to-hidden product and the gates as tensor
/// ops, so it runs (and differentiates) on every backend.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// The settings LSTM and GRU share, as libtorch's nn::LSTMOptions / nn::GRUOptions.
struct RNNOptionsBase {
  ANVIL_OPTION(RNNOptionsBase, int64_t, input_size) = 0;  ///< features of each input step
  ANVIL_OPTION(RNNOptionsBase, int64_t, hidden_size) = 0;  ///< features of the hidden state
  ANVIL_OPTION(RNNOptionsBase, int64_t, num_layers) = 1;  ///< stacked recurrent layers
  ANVIL_OPTION(RNNOptionsBase, bool, bias) = true;  ///< whether the layers have bias_ih and bias_hh
  ANVIL_OPTION(RNNOptionsBase, bool, batch_first) = false;  ///< input/output [N, L, *] instead of [L, N, *]
  ANVIL_OPTION(RNNOptionsBase, double, dropout) = 0.0;  ///< on each layer's output but the last, in training
  /// run each layer both ways and concatenate (output 2 * hidden_size)
  ANVIL_OPTION(RNNOptionsBase, bool, bidirectional) = false;
};
using LSTMOptions = RNNOptionsBase;  ///< libtorch's name for LSTM's settings.
using GRUOptions = RNNOptionsBase;  ///< libtorch's name for GRU's settings.

/// What LSTM and GRU share: the parameters (gates * hidden_size rows each),
/// their initialisation, the shape checks and the loop over layers and
/// directions.
class RNNBase : public Module {
 public:
  std::string extra_repr() const override;
  void reset_parameters();  ///< every weight and bias uniform in +-1/sqrt(hidden_size), as PyTorch
  /// The parameters of one layer and direction, in PyTorch's order.
  /// One layer-direction's parameters.
  struct Weights {
    ///@{
    /// input-to-hidden and hidden-to-hidden weights and biases
    Tensor w_ih, w_hh, b_ih, b_hh;
    ///@}
  };
  /// The parameters of `layer` in `direction` (0 forward, 1 reverse).
  const Weights& weights(int64_t layer, int64_t direction) const;

  RNNOptionsBase options;  ///< the settings it was built with

 protected:
  /// The layers' parameters for `gates` gates, registered under PyTorch's names.
  RNNBase(const char* name, int64_t gates, const RNNOptionsBase& options);
  int64_t directions() const { return options.bidirectional ? 2 : 1; }  ///< 2 when bidirectional, else 1.
  /// One time step: the new (h, c) from the projected input x_t (its
  /// w_ih x + b_ih part, [N, gates * H]) and the previous state. GRU has no c.
  virtual std::pair<Tensor, Tensor> cell(const Weights& w, const Tensor& x_proj, const Tensor& h,
                                         const Tensor& c) const = 0;
  /// input as given; h0 (and c0 for LSTM) [layers * directions, N, H] or undefined.
  /// Returns output (as given: [L, N, D*H], batch first or unbatched) and the final h (and c).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0, bool has_cell);

 private:
  std::vector<Weights> weights_;  ///< [layer * directions + direction]
};

/// Long short-term memory, as torch.nn.LSTM: forward gives (output, (h_n, c_n)).
class LSTM : public RNNBase {
 public:
  /// One layer of `hidden_size` features over inputs of `input_size`.
  LSTM(int64_t input_size, int64_t hidden_size) : LSTM(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTM(const LSTMOptions& o) : RNNBase("LSTM", 4, o) {}  ///< As `o` says.
  /// (output, (h_n, c_n)), as libtorch; hx = (h_0, c_0), zeros when absent.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx = {});
  /// {input[, h_0, c_0]} -> output (what Sequential and the Trainer call).
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

 protected:
  std::pair<Tensor, Tensor> cell(const Weights& w, const Tensor& x_proj, const Tensor& h,
                                 const Tensor& c) const override;
};

/// Gated recurrent unit, as torch.nn.GRU: forward gives (output, h_n).
class GRU : public RNNBase {
 public:
  /// One layer of `hidden_size` features over inputs of `input_size`.
  GRU(int64_t input_size, int64_t hidden_size) : GRU(GRUOptions(input_size, hidden_size)) {}
  explicit GRU(const GRUOptions& o) : RNNBase("GRU", 3, o) {}  ///< As `o` says.
  /// (output, h_n), as libtorch; h_0 zeros when undefined.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {});
  /// {input[, h_0]} -> output.
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

 protected:
  std::pair<Tensor, Tensor> cell(const Weights& w, const Tensor& x_proj, const Tensor& h,
                                 const Tensor& c) const override;
};

}  // namespace anvil::nn
