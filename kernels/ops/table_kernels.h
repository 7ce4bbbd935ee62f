#pragma once
// The table-driven ops' kernels: each backend compiles the op tables
// (unary_ops.h, binary_ops.h, reduce_ops.h, scan_ops.h, sort_ops.h) into one
// kernel per family, selected by the op enum. Adding a row to a table needs
// no new kernel. Inputs are already broadcast to out's shape (strides may be
// 0); any strides; the caller checks dtypes and shapes (core/ops).
#include <cstdint>

#include "core/base/scalar.h"
#include "kernels/ops/binary_ops.h"
#include "kernels/ops/reduce_ops.h"
#include "kernels/ops/scan_ops.h"
#include "kernels/ops/sort_ops.h"
#include "kernels/ops/unary_ops.h"
#include "kernels/view.h"

namespace anvil::kernel {

// out = value, cast to out's dtype.
struct Fill {
  static constexpr const char* name = "fill";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const Scalar& value);
};

struct Unary {
  static constexpr const char* name = "unary";
  static constexpr bool has_fallback = false;
  using Signature = void(UnaryOp op, const View& out, const View& in, const UnaryParams& p);
};

struct Binary {
  static constexpr const char* name = "binary";
  static constexpr bool has_fallback = false;
  using Signature = void(BinaryOp op, const View& out, const View& a, const View& b);
};

// out = cond ? a : b, cond bool.
struct Where {
  static constexpr const char* name = "where";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& cond, const View& a, const View& b);
};

// out has in's rank; dims where out.shape[d] == 1 are reduced. ArgMax/ArgMin
// reduce exactly one dim and write int64.
struct Reduce {
  static constexpr const char* name = "reduce";
  static constexpr bool has_fallback = false;
  using Signature = void(ReduceOp op, const View& out, const View& in, const ReduceParams& p);
};

// out[.., i, ..] is the combine of in[.., 0, ..] to in[.., i, ..] along dim.
// out and in share a shape and a dtype (core converts integer inputs to int64).
struct Scan {
  static constexpr const char* name = "scan";
  static constexpr bool has_fallback = false;
  using Signature = void(ScanOp op, const View& out, const View& in, int64_t dim);
};

// Stable sort along dim in sort_ops.h's order: values in in's dtype and int64
// indices into dim, both of in's shape.
struct Sort {
  static constexpr const char* name = "sort";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p);
};

}  // namespace anvil::kernel
