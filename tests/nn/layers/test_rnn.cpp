// LSTM and GRU against a hand-written cell loop on plain doubles (the
// reference never calls an anvil op), their gradients against finite
// differences, PyTorch's parameter names, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "nn/layers/container.h"
#include "nn/layers/linear.h"
#include "nn/layers/rnn.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using Vec = std::vector<double>;

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// y[r] = W[r, :] . x + b[r] for W [rows, cols] row-major (b may be empty).
Vec affine(const Vec& w, const Vec& b, const Vec& x, int64_t rows) {
  const int64_t cols = static_cast<int64_t>(x.size());
  Vec y(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = b.empty() ? 0.0 : b[r];
    for (int64_t c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

struct Reference {
  std::vector<std::vector<Vec>> out;  // [L][N] -> D*H values
  std::vector<std::vector<Vec>> h, c;  // [layers*D][N] -> H values
};

// The whole network, one sequence (batch element) at a time, time-major input [L][N] -> in values.
Reference reference(nn::RNNBase& m, bool lstm, const std::vector<std::vector<Vec>>& x) {
  const auto& o = m.options;
  const int64_t hs = o.hidden_size, dirs = o.bidirectional ? 2 : 1, g = lstm ? 4 : 3;
  const size_t len = x.size(), n = x[0].size();
  Reference ref;
  std::vector<std::vector<Vec>> input = x;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    std::vector<std::vector<Vec>> out(len, std::vector<Vec>(n, Vec(static_cast<size_t>(dirs * hs))));
    for (int64_t d = 0; d < dirs; ++d) {
      const auto& w = m.weights(layer, d);
      Vec wih = w.w_ih.to_vector<double>(), whh = w.w_hh.to_vector<double>();
      Vec bih = w.b_ih.defined() ? w.b_ih.to_vector<double>() : Vec{};
      Vec bhh = w.b_hh.defined() ? w.b_hh.to_vector<double>() : Vec{};
      std::vector<Vec> hn(n), cn(n);
      for (size_t b = 0; b < n; ++b) {
        Vec h(static_cast<size_t>(hs), 0.0), c(static_cast<size_t>(hs), 0.0);
        for (size_t s = 0; s < len; ++s) {
          const size_t t = d == 0 ? s : len - 1 - s;
          Vec xi = affine(wih, bih, input[t][b], g * hs), hh = affine(whh, bhh, h, g * hs);
          Vec hnew(static_cast<size_t>(hs));
          for (int64_t j = 0; j < hs; ++j) {
            if (lstm) {
              const double i = sig(xi[j] + hh[j]), f = sig(xi[hs + j] + hh[hs + j]);
              const double gg = std::tanh(xi[2 * hs + j] + hh[2 * hs + j]), oo = sig(xi[3 * hs + j] + hh[3 * hs + j]);
              c[j] = f * c[j] + i * gg;
              hnew[j] = oo * std::tanh(c[j]);
            } else {
              const double r = sig(xi[j] + hh[j]), z = sig(xi[hs + j] + hh[hs + j]);
              const double nn_ = std::tanh(xi[2 * hs + j] + r * hh[2 * hs + j]);
              hnew[j] = (1 - z) * nn_ + z * h[j];
            }
          }
          h = hnew;
          for (int64_t j = 0; j < hs; ++j) out[t][b][d * hs + j] = h[j];
        }
        hn[b] = h;
        cn[b] = c;
      }
      ref.h.push_back(hn);
      ref.c.push_back(cn);
    }
    input = out;
  }
  ref.out = input;
  return ref;
}

std::vector<std::vector<Vec>> time_major(const Tensor& x) {  // [L, N, F] -> nested
  std::vector<std::vector<Vec>> r(static_cast<size_t>(x.size(0)));
  for (int64_t t = 0; t < x.size(0); ++t)
    for (int64_t b = 0; b < x.size(1); ++b) r[t].push_back(x[t][b].to_vector<double>());
  return r;
}

void expect_matches(const Tensor& got, const std::vector<std::vector<Vec>>& want) {  // got [A, B, F]
  ASSERT_EQ(got.size(0), static_cast<int64_t>(want.size()));
  for (int64_t a = 0; a < got.size(0); ++a)
    for (int64_t b = 0; b < got.size(1); ++b)
      testing::expect_near_vec(got[a][b].to_vector<double>(), want[a][b], 1e-10);
}

struct Case {
  bool lstm;
  int64_t layers;
  bool bidirectional, batch_first, bias;
};

class RnnMatchesLoop : public ::testing::TestWithParam<Case> {};

TEST_P(RnnMatchesLoop, OutputAndFinalStates) {
  const Case k = GetParam();
  manual_seed(7);
  auto o =
      nn::LSTMOptions(3, 4).num_layers(k.layers).bidirectional(k.bidirectional).batch_first(k.batch_first).bias(k.bias);
  std::shared_ptr<nn::RNNBase> m;
  if (k.lstm)
    m = std::make_shared<nn::LSTM>(o);
  else
    m = std::make_shared<nn::GRU>(o);
  m->to(kFloat64);
  Tensor x = randn({5, 2, 3}, kFloat64);  // [L, N, in]
  Tensor out, h, c;
  Tensor given = k.batch_first ? x.transpose(0, 1).contiguous() : x;
  if (k.lstm) {
    auto [y, state] = static_cast<nn::LSTM&>(*m).forward(given);
    out = y, h = std::get<0>(state), c = std::get<1>(state);
  } else {
    std::tie(out, h) = static_cast<nn::GRU&>(*m).forward(given);
  }
  if (k.batch_first) out = out.transpose(0, 1);
  const int64_t dirs = k.bidirectional ? 2 : 1;
  EXPECT_EQ(out.shape(), (Shape{5, 2, 4 * dirs}));
  EXPECT_EQ(h.shape(), (Shape{k.layers * dirs, 2, 4}));
  Reference ref = reference(*m, k.lstm, time_major(x));
  expect_matches(out, ref.out);
  expect_matches(h, ref.h);
  if (k.lstm) expect_matches(c, ref.c);
}

INSTANTIATE_TEST_SUITE_P(Rnn, RnnMatchesLoop,
                         ::testing::Values(Case{true, 1, false, false, true}, Case{true, 2, true, true, true},
                                           Case{true, 2, false, false, false}, Case{false, 1, false, true, true},
                                           Case{false, 2, true, false, true}, Case{false, 1, true, false, false}));

TEST(Lstm, ParameterNamesAndShapesAreTorchs) {
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  const std::vector<std::string> want = {
      "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  EXPECT_EQ(testing::names_of(lstm.named_parameters()), want);
  EXPECT_EQ(lstm.weights(1, 1).w_ih.shape(), (Shape{20, 10}));
  nn::GRU gru(7, 6);
  EXPECT_EQ(gru.weights(0, 0).w_hh.shape(), (Shape{18, 6}));
  // PyTorch's init: uniform in +-1/sqrt(hidden).
  for (auto& p : lstm.parameters()) EXPECT_LE(p.abs().max().item<double>(), 1.0 / std::sqrt(5.0));
  EXPECT_EQ(lstm.extra_repr(), "3, 5, num_layers=2, bidirectional=True");
}

TEST(Lstm, InitialStatesAreUsedAndUnbatchedWorks) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  lstm.to(kFloat64);
  Tensor x = randn({4, 1, 3}, kFloat64), h0 = randn({2, 1, 4}, kFloat64), c0 = randn({2, 1, 4}, kFloat64);
  auto [y0, s0] = lstm.forward(x);
  auto [y1, s1] = lstm.forward(x, std::make_tuple(h0, c0));
  EXPECT_GT((y1 - y0).abs().max().item<double>(), 1e-3);
  // Unbatched [L, in] with states [layers, H] is the batch of one.
  auto [yu, su] = lstm.forward(x.squeeze(1), std::make_tuple(h0.squeeze(1), c0.squeeze(1)));
  EXPECT_EQ(yu.shape(), (Shape{4, 4}));
  EXPECT_LT((yu - y1.squeeze(1)).abs().max().item<double>(), 1e-12);
  EXPECT_LT((std::get<1>(su) - std::get<1>(s1).squeeze(1)).abs().max().item<double>(), 1e-12);
  // The final h of the last layer is the last output step.
  EXPECT_LT((std::get<0>(s1)[1] - y1[3]).abs().max().item<double>(), 1e-12);
}

TEST(Lstm, GradientsMatchFiniteDifferences) {
  manual_seed(11);
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true).batch_first(true));
  lstm.to(kFloat64);
  EXPECT_TRUE(
      testing::module_gradcheck(lstm,
                                [&](const std::vector<Tensor>& in) {
                                  auto [y, s] = lstm.forward(in[0], std::make_tuple(in[1], in[2]));
                                  return cat({y.flatten(), std::get<0>(s).flatten(), std::get<1>(s).flatten()});
                                },
                                {randn({2, 3, 2}, kFloat64), randn({4, 2, 3}, kFloat64), randn({4, 2, 3}, kFloat64)}));
}

TEST(Gru, GradientsMatchFiniteDifferences) {
  manual_seed(12);
  nn::GRU gru(nn::GRUOptions(2, 3).num_layers(2));
  gru.to(kFloat64);
  EXPECT_TRUE(testing::module_gradcheck(gru,
                                        [&](const std::vector<Tensor>& in) {
                                          auto [y, h] = gru.forward(in[0], in[1]);
                                          return cat({y.flatten(), h.flatten()});
                                        },
                                        {randn({3, 2, 2}, kFloat64), randn({2, 2, 3}, kFloat64)}));
}

TEST(Rnn, DropoutBetweenLayersOnlyInTraining) {
  manual_seed(5);
  nn::GRU gru(nn::GRUOptions(3, 8).num_layers(2).dropout(0.5));
  Tensor x = randn({6, 2, 3});
  gru.eval();
  Tensor a = std::get<0>(gru.forward(x)), b = std::get<0>(gru.forward(x));
  EXPECT_EQ((a - b).abs().max().item<double>(), 0.0);
  gru.train();
  Tensor c = std::get<0>(gru.forward(x));
  EXPECT_GT((c - a).abs().max().item<double>(), 1e-4);  // the second layer saw a dropped-out input
  nn::GRU one(nn::GRUOptions(3, 8).dropout(0.5));  // one layer: nothing between layers to drop
  Tensor d = std::get<0>(one.forward(x));
  one.eval();
  EXPECT_EQ((std::get<0>(one.forward(x)) - d).abs().max().item<double>(), 0.0);
}

TEST(Rnn, InSequentialThroughForwardInputs) {
  manual_seed(2);
  auto lstm = std::make_shared<nn::LSTM>(nn::LSTMOptions(3, 4).batch_first(true));
  auto seq = std::make_shared<nn::Sequential>(lstm, std::make_shared<nn::Linear>(4, 2));
  Tensor x = randn({2, 5, 3});
  Tensor y = seq->forward(x);
  EXPECT_EQ(y.shape(), (Shape{2, 5, 2}));
  EXPECT_LT((y - seq->at<nn::Linear>(1)->forward(std::get<0>(lstm->forward(x)))).abs().max().item<double>(), 1e-6);
  Tensor h0 = randn({1, 2, 4}), c0 = randn({1, 2, 4});
  Tensor y2 = (*seq)(x, h0, c0);
  auto [out, state] = lstm->forward(x, std::make_tuple(h0, c0));
  EXPECT_LT((y2 - seq->at<nn::Linear>(1)->forward(out)).abs().max().item<double>(), 1e-6);
}

TEST(Rnn, BadInputNamesTheModuleAndShapes) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  expect_error([&] { lstm.forward(randn({5, 2, 7})); }, {"LSTM", "[L, N, 3]", "[5, 2, 7]"});
  expect_error(
      [&] {
        lstm.forward(randn({5, 2, 3}), std::make_tuple(randn({1, 2, 4}), randn({2, 2, 4})));
      },
      {"LSTM", "h_0", "[2, 2, 4]", "[1, 2, 4]"});
  expect_error(
      [&] {
        lstm.forward(randn({5, 2, 3}), std::make_tuple(randn({2, 2, 4}), Tensor()));
      },
      {"LSTM", "h_0 and c_0 together"});
  nn::GRU gru(nn::GRUOptions(3, 4).batch_first(true));
  expect_error([&] { gru.forward(randn({2, 5, 3}), randn({1, 5, 4})); }, {"GRU", "h_0", "[1, 2, 4]", "[1, 5, 4]"});
  expect_error([&] { gru.forward_inputs({randn({2, 5, 3}), Tensor(), Tensor()}); }, {"GRU", "3 inputs"});
  expect_error([] { nn::GRU(nn::GRUOptions(3, 0)); }, {"GRU", "hidden_size"});
  expect_error([] { nn::LSTM(nn::LSTMOptions(3, 4).dropout(1.5)); }, {"LSTM", "dropout"});
}

}  // namespace
}  // namespace anvil
