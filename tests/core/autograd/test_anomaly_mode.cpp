// Anomaly detection: backward names the node whose backward made NaN or inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/autograd/anomaly_mode.h"
#include "core/autograd/engine.h"
#include "core/autograd/node.h"
#include "core/ops.h"

namespace anvil {
namespace {

std::string backward_error(const Tensor& loss) {
  try {
    loss.backward();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// 'name' as the message quotes it. Built by appending: GCC 12 warns
// (-Wrestrict, a false positive in libstdc++) on "'" + std::string.
std::string quoted(const std::string& name) { return std::string(1, '\'').append(name).append(1, '\''); }

// sqrt's gradient at 0 is inf: the multiply after it is finite in forward.
Tensor loss_with_inf_gradient(Tensor& x) {
  Tensor values = rand({6}, kFloat64) + 0.5;
  values.data<double>()[3] = 0.0;
  x = values.requires_grad_();
  return (x.sqrt() * randn({6}, kFloat64).exp()).sum();
}

TEST(AnomalyMode, OffByDefaultAndNonFiniteGradientsPassSilently) {
  EXPECT_FALSE(autograd::is_anomaly_enabled());
  Tensor x;
  loss_with_inf_gradient(x).backward();
  EXPECT_TRUE(std::isinf(x.grad().data<double>()[3]));
}

TEST(AnomalyMode, NamesTheNodeWhoseBackwardMadeInf) {
  autograd::DetectAnomalyGuard guard;
  Tensor x;
  Tensor loss = loss_with_inf_gradient(x);
  const std::string err = backward_error(loss);
  EXPECT_TRUE(contains(err, "anomaly detection")) << err;
  EXPECT_TRUE(contains(err, "returned inf")) << err;
  EXPECT_TRUE(contains(err, quoted(x.sqrt().grad_fn()->name()))) << err;
  EXPECT_FALSE(x.grad().defined()) << "the bad gradient reached the leaf";
  std::printf("[ message  ] %s\n", err.c_str());
}

TEST(AnomalyMode, NamesTheNodeWhoseBackwardMadeNaN) {
  autograd::set_detect_anomaly(true);
  // d/dx (x * log(x)) at 0: log(0) = -inf times the incoming 1, plus 0 * (1/0) = NaN.
  Tensor x = (rand({5}, kFloat64) + 0.1).requires_grad_();
  {
    NoGradGuard no_grad;
    x.data<double>()[1] = 0.0;
  }
  Tensor y = x.log();
  Tensor loss = (y * 0.0).sum();  // the gradient reaching log is 0; 0 / 0 is NaN
  const std::string err = backward_error(loss);
  autograd::set_detect_anomaly(false);
  EXPECT_TRUE(contains(err, "returned NaN")) << err;
  EXPECT_TRUE(contains(err, quoted(y.grad_fn()->name()))) << err;
}

TEST(AnomalyMode, FiniteGraphsGiveTheSameGradients) {
  Tensor x = randn({4, 3}, kFloat64).requires_grad_();
  (x.tanh() * x).sum().backward();
  Tensor plain = x.grad().clone();
  x.set_grad(Tensor());
  {
    autograd::DetectAnomalyGuard guard;
    (x.tanh() * x).sum().backward();
  }
  EXPECT_EQ(plain.to_vector<double>(), x.grad().to_vector<double>());
  EXPECT_FALSE(autograd::is_anomaly_enabled()) << "the guard did not restore the previous mode";
}

TEST(AnomalyMode, ANonFiniteRootGradientIsNamed) {
  autograd::DetectAnomalyGuard guard;
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  Tensor g = full({3}, std::numeric_limits<double>::quiet_NaN(), kFloat64);
  try {
    autograd::backward({y}, {g});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "gradient given to backward")) << e.what();
  }
}

}  // namespace
}  // namespace anvil
