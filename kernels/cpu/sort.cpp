// Sort along one dim (kernels/ops/sort_ops.h's order): each line's indices
// sorted by (value, index), then values and indices written through their
// strides. Lines are split over threads.
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cpu/lines.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/ops/sort_ops.h"

namespace anvil::cpu {
namespace {

template <typename T>
void sort_lines(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p) {
  using A = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
  const Lines<3> l = lines_along<3>({&values, &indices, &in}, dim);
  T* v = values.ptr<T>();
  int64_t* idx = indices.ptr<int64_t>();
  const T* x = in.ptr<T>();
  parallel_for(l.count, l.count * l.length * 16, [&](int64_t begin, int64_t end) {
    std::vector<A> key(static_cast<size_t>(l.length));
    std::vector<int64_t> order(static_cast<size_t>(l.length));
    for (int64_t line = begin; line < end; ++line) {
      const auto [ov, oi, ox] = l.first[static_cast<size_t>(line)];
      for (int64_t i = 0; i < l.length; ++i) key[i] = cast_value<A>(x[ox + i * l.step[2]]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return ops::sorts_before(key[a], a, key[b], b, p.descending); });
      for (int64_t i = 0; i < l.length; ++i) {
        const int64_t from = order[static_cast<size_t>(i)];
        v[ov + i * l.step[0]] = x[ox + from * l.step[2]];
        idx[oi + i * l.step[1]] = from;
      }
    }
  });
}

}  // namespace

void sort(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p) {
  ANVIL_CHECK(
      values.shape == in.shape && indices.shape == in.shape && values.dtype == in.dtype && indices.dtype == kInt64,
      "sort: expected values ", in.dtype, in.shape, " and indices int64", in.shape, ", got values ", values.dtype,
      values.shape, " and indices ", indices.dtype, indices.shape);
  ANVIL_CHECK(in.dim() == 0 ? (dim == 0 || dim == -1) : (dim >= 0 && dim < in.dim()), "sort: dim ", dim,
              " out of range for shape ", in.shape);
  if (in.dim() == 0) dim = 0;
  visit_dtype(in.dtype, [&](auto tag) { sort_lines<decltype(tag)>(values, indices, in, dim, p); });
}

ANVIL_REGISTER_KERNEL(kernel::Sort, CPU, sort);

}  // namespace anvil::cpu
