#pragma once
// index_select, index_add, gather and scatter_add: the view helpers and the
// argument checks both backends run (same messages). Each check takes views
// already widened by at_least_1d and returns dim normalised to [0, rank).
// The indices themselves are checked by each backend (CPU before writing,
// CUDA on the device: kernels/cuda/index_errors.h).
#include <cstdint>
#include "kernels/view.h"

namespace anvil::shapes {

View at_least_1d(const View& v);  // a 0-D view as [1]
View without_dim(const View& v, int64_t dim);

int64_t checked_dim(const char* op, int64_t dim, int64_t rank);
void check_index_dtype(const char* op, const View& index);
// a and b have one rank and agree in every dim but `dim`.
void check_same_except(const char* op, const View& a, const char* a_name, const View& b, const char* b_name,
                       int64_t dim);

int64_t check_index_select(const View& out, const View& in, int64_t dim, const View& index);
int64_t check_index_add(const View& out, int64_t dim, const View& index, const View& src);
int64_t check_gather(const View& out, const View& in, int64_t dim, const View& index);
int64_t check_scatter_add(const View& out, int64_t dim, const View& index, const View& src);
// scatter_add's checks under another op's name (scatter).
int64_t check_scatter(const char* op, const View& out, int64_t dim, const View& index, const View& src);
// nonzero: out int64 [n, in.dim()].
void check_nonzero(const View& out, const View& in);

}  // namespace anvil::shapes
