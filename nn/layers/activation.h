#pragma once
// Activation modules: thin wrappers over the elementwise ops, so they can sit
// in a Sequential.
#include "core/ops/elementwise.h"
#include "nn/module.h"

namespace anvil::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override { return relu(x); }
};

class GELU : public Module {
 public:
  // GeluApprox::Tanh is GPT-2's approximation; None is the exact erf form.
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

}  // namespace anvil::nn
