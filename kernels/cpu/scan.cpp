// Scans along one dim (kernels/ops/scan_ops.h): each line in order, the
// running value in double for floating dtypes (float16 and bfloat16 too) and
// int64 for integers. Lines are split over threads.
#include <type_traits>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cpu/lines.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/ops/scan_ops.h"

namespace anvil::cpu {
namespace {

template <ScanOp Op, typename T> void scan_lines(const View& out, const View& in, int64_t dim) {
  using A = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  using S = ops::Scan<Op, A>;
  const Lines<2> l = lines_along<2>({&out, &in}, dim);
  T* y = out.ptr<T>();
  const T* x = in.ptr<T>();
  parallel_for(l.count, l.count * l.length * 4, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const auto [oy, ox] = l.first[static_cast<size_t>(line)];
      A acc = S::identity();
      for (int64_t i = 0; i < l.length; ++i) {
        acc = S::combine(acc, cast_value<A>(x[ox + i * l.step[1]]));
        y[oy + i * l.step[0]] = cast_value<T>(acc);
      }
    }
  });
}

}  // namespace

void scan(ScanOp op, const View& out, const View& in, int64_t dim) {
  const char* name = ops::scan_name(op);
  ANVIL_CHECK(out.shape == in.shape && out.dtype == in.dtype, name, ": output ", out.dtype, out.shape,
              " should match input ", in.dtype, in.shape);
  ANVIL_CHECK(in.dim() == 0 ? (dim == 0 || dim == -1) : (dim >= 0 && dim < in.dim()), name, ": dim ", dim,
              " out of range for shape ", in.shape);
  ANVIL_CHECK(op != ScanOp::LogSumExp || is_floating(in.dtype), name, ": not supported for dtype ", in.dtype,
              " (floating dtypes only)");
  if (in.dim() == 0) dim = 0;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ScanOp::Sum:
        return scan_lines<ScanOp::Sum, T>(out, in, dim);
      case ScanOp::Prod:
        return scan_lines<ScanOp::Prod, T>(out, in, dim);
      case ScanOp::LogSumExp:
        if constexpr (!std::is_integral_v<T>) return scan_lines<ScanOp::LogSumExp, T>(out, in, dim);
        return;
    }
  });
}

ANVIL_REGISTER_KERNEL(kernel::Scan, CPU, scan);

}  // namespace anvil::cpu
