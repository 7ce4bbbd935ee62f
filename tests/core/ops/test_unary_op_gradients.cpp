// Every differentiable row of the unary op table (kernels/ops/unary_ops.h),
// found through the table itself: the gradient core records for it
// (core/ops/elementwise.cpp's unary_gradient<op>) against central finite
// differences in float64, and, through create_graph, the gradient of that
// gradient (the composed form the fused activation backwards fall back to).
// A new row is checked here by being in the table.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops.h"
#include "kernels/ops/unary_ops.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::gradcheck;

struct PlainRow {
  UnaryOp op;
  const char* name;
  Tensor (*function)(const Tensor&);
};

#define ANVIL_ROW(Enum, function, domain, result, api) ANVIL_ROW_##api(Enum, function)
#define ANVIL_ROW_Plain(Enum, function) PlainRow{UnaryOp::Enum, #function, &anvil::function},
#define ANVIL_ROW_Custom(Enum, function)
const PlainRow kPlainRows[] = {ANVIL_UNARY_OPS(ANVIL_ROW)};
#undef ANVIL_ROW
#undef ANVIL_ROW_Plain
#undef ANVIL_ROW_Custom

// The Plain rows with a gradient: a result that may be floating (not the
// bool results, nor the integer-only rows such as bitwise_not).
std::vector<PlainRow> differentiable_rows() {
  std::vector<PlainRow> rows;
  for (const PlainRow& row : kPlainRows)
    if (ops::differentiable(ops::unary_info(row.op))) rows.push_back(row);
  return rows;
}

// Points away from every kink and jump of the table's functions (0 and the
// integers): magnitudes in [0.3, 0.7] and [1.3, 1.7], of one sign.
Tensor points(double sign, uint64_t seed) {
  manual_seed(seed);
  Tensor u = rand({2, 5}, kFloat64);  // [0, 1)
  Tensor magnitude =
      u * 0.4 + 0.3 + where(gt(rand({2, 5}, kFloat64), 0.5), full({2, 5}, 1.0, kFloat64), zeros({2, 5}, kFloat64));
  return magnitude * sign;
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

TEST(UnaryOpGradients, EveryDifferentiableRowMatchesFiniteDifferences) {
  int checked_sides = 0;
  const std::vector<PlainRow> rows = differentiable_rows();
  for (const PlainRow& row : rows) {
    for (double sign : {1.0, -1.0}) {
      const Tensor x = points(sign, 7);
      if (!all_finite(row.function(x))) continue;  // e.g. log and sqrt of negatives
      const std::string where = std::string(row.name) + (sign > 0 ? " at positive points" : " at negative points");
      EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return row.function(in[0]); }, {x})) << where;
      // The gradient's own gradient: backward recorded with create_graph.
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            EnableGradGuard grad_on;  // gradcheck's shape probe runs under NoGradGuard
            const Tensor x_in = in[0].requires_grad() ? in[0] : in[0].detach().requires_grad_(true);
            const Tensor y = row.function(x_in);
            const Tensor dy = autograd::grad({y}, {x_in}, {ones_like(y)}, {.create_graph = true})[0];
            // A gradient that does not depend on x (neg's, floor's) has no graph:
            // tie it to x with a zero term so gradcheck can differentiate it.
            return dy.requires_grad() ? dy : dy + x_in * 0.0;
          },
          {x}))
          << where << ", second order";
      ++checked_sides;
    }
  }
  // Every row has at least its positive side.
  EXPECT_GE(checked_sides, static_cast<int>(rows.size()));
  EXPECT_GE(rows.size(), 20u);
}

}  // namespace
}  // namespace anvil
