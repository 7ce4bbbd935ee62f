#pragma once
// Elementwise ops, backend-neutral: the names errors use for each op, and
// where's argument checks (same messages on every backend).
#include "kernels/ops/table_kernels.h"

namespace anvil::shapes {

const char* op_name(UnaryOp op);  // "neg", "abs", ...
const char* op_name(BinaryOp op);  // "add", "sub", ...

// unary: out has in's shape. binary: out, a and b share one shape (inputs
// already broadcast) and a and b one dtype.
void check_unary(UnaryOp op, const View& out, const View& in);
void check_binary(BinaryOp op, const View& out, const View& a, const View& b);

// out, cond, a and b share one shape (inputs already broadcast); cond is
// bool (or uint8), a and b have out's dtype.
void check_where(const View& out, const View& cond, const View& a, const View& b);

}  // namespace anvil::shapes
