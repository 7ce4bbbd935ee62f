#pragma once
/// @file
/// Activation modules: thin wrappers over the elementwise ops, so they can sit
/// in a Sequential.
#include <sstream>
#include <string>

#include "core/ops/elementwise.h"
#include "nn/functional.h"
#include "nn/layers/activation_options.h"
#include "nn/module.h"

namespace anvil::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override { return relu(x); }
};

class GELU : public Module {
 public:
  /// GeluApprox::Tanh is GPT-2's approximation; None is the exact erf form.
  explicit GELU(GeluApprox approximate = GeluApprox::None) : Module("GELU"), approximate(approximate) {}
  Tensor forward(const Tensor& x) override { return gelu(x, approximate); }
  std::string extra_repr() const override { return approximate == GeluApprox::Tanh ? "approximate='tanh'" : ""; }
  GeluApprox approximate;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override { return silu(x); }
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};

/// The parametrised ones take libtorch's options: nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)).
/// inplace writes the result into the input, as libtorch's.
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(const LeakyReLUOptions& o = {}) : Module("LeakyReLU"), options(o) {}
  Tensor forward(const Tensor& x) override {
    return apply_in_place_if(options.inplace, x,
                             [&](const Tensor& in) { return leaky_relu(in, options.negative_slope); });
  }
  std::string extra_repr() const override {
    std::ostringstream os;
    os << "negative_slope=" << options.negative_slope();
    return os.str();
  }
  LeakyReLUOptions options;
};

class ELU : public Module {
 public:
  explicit ELU(const ELUOptions& o = {}) : Module("ELU"), options(o) {}
  Tensor forward(const Tensor& x) override {
    return apply_in_place_if(options.inplace, x, [&](const Tensor& in) { return elu(in, options.alpha); });
  }
  std::string extra_repr() const override {
    std::ostringstream os;
    os << "alpha=" << options.alpha();
    return os.str();
  }
  ELUOptions options;
};

class Softplus : public Module {
 public:
  explicit Softplus(const SoftplusOptions& o = {}) : Module("Softplus"), options(o) {}
  Tensor forward(const Tensor& x) override { return softplus(x, options.beta, options.threshold); }
  std::string extra_repr() const override {
    std::ostringstream os;
    os << "beta=" << options.beta() << ", threshold=" << options.threshold();
    return os.str();
  }
  SoftplusOptions options;
};

class Mish : public Module {
 public:
  Mish() : Module("Mish") {}
  Tensor forward(const Tensor& x) override { return mish(x); }
};

class Hardswish : public Module {
 public:
  Hardswish() : Module("Hardswish") {}
  Tensor forward(const Tensor& x) override { return hardswish(x); }
};

/// The gated linear unit (Dauphin et al. 2017): a * sigmoid(b) for the two
/// halves a, b of the input along options.dim, which halves that dim.
/// nn::GLU(nn::GLUOptions(1)) or nn::GLU(1), as libtorch's.
class GLU : public Module {
 public:
  explicit GLU(const GLUOptions& o = {}) : Module("GLU"), options(o) {}
  explicit GLU(int64_t dim) : GLU(GLUOptions{.dim = dim}) {}
  Tensor forward(const Tensor& x) override { return functional::glu(x, options.dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(options.dim()); }
  GLUOptions options;
};

}  // namespace anvil::nn
