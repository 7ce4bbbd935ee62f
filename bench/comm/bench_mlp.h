#pragma once
// The model bench_comm's DDP and strategy modes train: a Fashion-MNIST-shaped
// MLP, 784 -> hidden x layers (ReLU) -> 10, so its parameter count (and the
// bytes each strategy moves) is set from the command line.
#include <cstdint>
#include <memory>

#include <anvil/anvil.h>

namespace anvil::bench {

inline std::shared_ptr<nn::Sequential> make_bench_mlp(int64_t layers, int64_t hidden) {
  auto seq = std::make_shared<nn::Sequential>();
  int64_t in = 784;
  for (int64_t i = 0; i < layers; ++i) {
    seq->push_back(std::make_shared<nn::Linear>(in, hidden));
    seq->push_back(std::make_shared<nn::ReLU>());
    in = hidden;
  }
  seq->push_back(std::make_shared<nn::Linear>(in, 10));
  return seq;
}

}  // namespace anvil::bench
