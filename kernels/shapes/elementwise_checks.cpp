#include "kernels/shapes/elementwise_checks.h"

#include "core/base/error.h"

namespace anvil::shapes {

const char* op_name(UnaryOp op) { return ops::unary_info(op).name; }

const char* op_name(BinaryOp op) { return ops::binary_info(op).name; }

void check_unary(UnaryOp op, const View& out, const View& in) {
  ANVIL_CHECK(out.shape == in.shape, op_name(op), ": output shape ", out.shape, " differs from input shape ", in.shape);
}

void check_binary(BinaryOp op, const View& out, const View& a, const View& b) {
  const char* name = op_name(op);
  ANVIL_CHECK(out.shape == a.shape && out.shape == b.shape, name, ": shapes differ: out ", out.shape, ", a ", a.shape,
              ", b ", b.shape, " (inputs must be broadcast to the output shape)");
  ANVIL_CHECK(a.dtype == b.dtype, name, ": input dtypes differ: ", a.dtype, " and ", b.dtype);
}

void check_where(const View& out, const View& cond, const View& a, const View& b) {
  ANVIL_CHECK(out.shape == cond.shape && out.shape == a.shape && out.shape == b.shape, "where: shapes differ: out ",
              out.shape, ", cond ", cond.shape, ", a ", a.shape, ", b ", b.shape,
              " (inputs must be broadcast to the output shape)");
  ANVIL_CHECK(cond.dtype == kBool || cond.dtype == kUInt8, "where: condition must be bool, got ", cond.dtype);
  ANVIL_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, "where: dtypes differ: out ", out.dtype, ", a ", a.dtype,
              ", b ", b.dtype);
}

}  // namespace anvil::shapes
