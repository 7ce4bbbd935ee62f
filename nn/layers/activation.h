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

/// relu as a module.
class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override { return relu(x); }
};

/// gelu (exact, or its tanh approximation) as a module.
class GELU : public Module {
 public:
  /// GeluApprox::Tanh is GPT-2's approximation; None is the exact erf form.
  explicit GELU(GeluApprox approximation = GeluApprox::None) : Module("GELU"), approximate(approximation) {}
  Tensor forward(const Tensor& x) override { return gelu(x, approximate); }
  std::string extra_repr() const override { return approximate == GeluApprox::Tanh ? "approximate='tanh'" : ""; }
  GeluApprox approximate;  ///< None (exact) or Tanh
};

/// silu (x * sigmoid(x)) as a module.
class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override { return silu(x); }
};

/// tanh as a module.
class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

/// sigmoid as a module.
class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};

/// The parametrised ones take libtorch's options: nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)).
/// inplace writes the result into the input, as libtorch's.
class LeakyReLU : public Module {
 public:
  /// With libtorch's options (negative_slope, inplace).
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
  LeakyReLUOptions options;  ///< the settings it was built with
};

/// elu as a module, with libtorch's options (alpha, inplace).
class ELU : public Module {
 public:
  explicit ELU(const ELUOptions& o = {}) : Module("ELU"), options(o) {}  ///< With libtorch's options (alpha, inplace).
  Tensor forward(const Tensor& x) override {
    return apply_in_place_if(options.inplace, x, [&](const Tensor& in) { return elu(in, options.alpha); });
  }
  std::string extra_repr() const override {
    std::ostringstream os;
    os << "alpha=" << options.alpha();
    return os.str();
  }
  ELUOptions options;  ///< the settings it was built with
};

/// softplus as a module, with libtorch's options (beta, threshold).
class Softplus : public Module {
 public:
  /// With libtorch's options (beta, threshold).
  explicit Softplus(const SoftplusOptions& o = {}) : Module("Softplus"), options(o) {}
  Tensor forward(const Tensor& x) override { return softplus(x, options.beta, options.threshold); }
  std::string extra_repr() const override {
    std::ostringstream os;
    os << "beta=" << options.beta() << ", threshold=" << options.threshold();
    return os.str();
  }
  SoftplusOptions options;  ///< the settings it was built with
};

/// mish (x * tanh(softplus(x))) as a module.
class Mish : public Module {
 public:
  Mish() : Module("Mish") {}
  Tensor forward(const Tensor& x) override { return mish(x); }
};

/// hardswish as a module.
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
  explicit GLU(const GLUOptions& o = {}) : Module("GLU"), options(o) {}  ///< Halves along options.dim (default -1).
  explicit GLU(int64_t dim) : GLU(GLUOptions{.dim = dim}) {}  ///< Halves along `dim`.
  Tensor forward(const Tensor& x) override { return functional::glu(x, options.dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(options.dim()); }
  GLUOptions options;  ///< the settings it was built with
};

}  // namespace anvil::nn
