#pragma once
// The lines of views along one dim, for the ops that work a line at a time
// (scan.cpp, sort.cpp): for each index of the other dims, the offset (in
// elements) of the line's first element in every view. Lines are independent,
// so the callers split them over threads.
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/view.h"

namespace anvil::cpu {

template <size_t N> struct Lines {
  int64_t count = 0;  // how many lines
  int64_t length = 0;  // elements per line (the dim's size)
  std::array<int64_t, N> step{};  // each view's stride along the dim
  std::vector<std::array<int64_t, N>> first;  // each line's first offsets
};

// Views of one shape; dim already wrapped (0 for a 0-d view: one line of one).
template <size_t N> Lines<N> lines_along(const std::array<const View*, N>& views, int64_t dim) {
  const View& v0 = *views[0];
  Lines<N> l;
  if (v0.dim() == 0) {
    l.count = 1, l.length = 1;
    l.first.push_back({});
    return l;
  }
  l.length = v0.shape[dim];
  for (size_t k = 0; k < N; ++k) l.step[k] = views[k]->strides[dim];
  l.count = l.length == 0 ? 0 : v0.numel() / l.length;
  l.first.reserve(static_cast<size_t>(l.count));
  std::vector<int64_t> index(static_cast<size_t>(v0.dim()), 0);
  for (int64_t line = 0; line < l.count; ++line) {
    std::array<int64_t, N> offs{};
    for (size_t k = 0; k < N; ++k)
      for (int64_t d = 0; d < v0.dim(); ++d) offs[k] += index[d] * views[k]->strides[d];
    l.first.push_back(offs);
    for (int64_t d = v0.dim() - 1; d >= 0; --d) {  // the next index, skipping dim
      if (d == dim) continue;
      if (++index[d] < v0.shape[d]) break;
      index[d] = 0;
    }
  }
  return l;
}

}  // namespace anvil::cpu
