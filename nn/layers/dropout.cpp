#include "nn/layers/dropout.h"

#include <sstream>

#include "core/ops/nn_ops.h"

namespace anvil::nn {

Dropout::Dropout(double probability) : Module("Dropout"), p(probability) {
  ANVIL_CHECK(p >= 0 && p <= 1, "Dropout: expected a probability p in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

std::string Dropout::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p;
  return os.str();
}

}  // namespace anvil::nn
