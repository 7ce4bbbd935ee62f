#pragma once
// Comparing what several ranks ended with against one process: a list of
// tensors flattened into host values, and the largest difference of two
// such lists (the ZeRO tests compare parameters and optimizer state so).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/tensor.h"

namespace anvil::distributed::testing {

inline std::vector<double> flat_values(const std::vector<Tensor>& ts) {
  std::vector<double> out;
  for (const Tensor& t : ts)
    for (double v : t.to_vector<double>()) out.push_back(v);
  return out;
}

inline double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace anvil::distributed::testing
