#include "kernels/shapes/index_checks.h"

#include "core/base/error.h"

namespace anvil::shapes {

View at_least_1d(const View& v) { return v.dim() > 0 ? v : View{v.data, v.dtype, {1}, {1}, v.device_index}; }

View without_dim(const View& v, int64_t dim) {
  View r = v;
  r.shape.erase(r.shape.begin() + dim);
  r.strides.erase(r.strides.begin() + dim);
  return r;
}

int64_t checked_dim(const char* op, int64_t dim, int64_t rank) {
  ANVIL_CHECK(dim >= -rank && dim < rank, op, ": dim ", dim, " out of range for a tensor of rank ", rank);
  return dim < 0 ? dim + rank : dim;
}

void check_index_dtype(const char* op, const View& index) {
  ANVIL_CHECK(index.dtype == kInt64, op, ": index must be int64, got ", index.dtype);
}

void check_same_except(const char* op, const View& a, const char* a_name, const View& b, const char* b_name,
                       int64_t dim) {
  ANVIL_CHECK(a.dim() == b.dim(), op, ": ", a_name, " rank ", a.dim(), " differs from ", b_name, " rank ", b.dim());
  for (int64_t d = 0; d < a.dim(); ++d)
    ANVIL_CHECK(d == dim || a.shape[d] == b.shape[d], op, ": ", a_name, " shape ", a.shape, " and ", b_name, " shape ",
                b.shape, " must agree except in dim ", dim);
}

namespace {

// index_select and index_add: a 1-D int64 index along `dim`, `out` and
// `other` of one dtype and equal shapes but in dim, where `counted` (one of
// the two) has one entry per index.
void check_index_along_dim(const char* op, int64_t dim, const View& index, const View& out, const View& other,
                           const char* other_name, const View& counted, const char* counted_name) {
  check_index_dtype(op, index);
  ANVIL_CHECK(index.dim() <= 1, op, ": index must be 1-D, got shape ", index.shape);
  ANVIL_CHECK(out.dtype == other.dtype, op, ": output dtype ", out.dtype, " differs from ", other_name, " dtype ",
              other.dtype);
  check_same_except(op, out, "output", other, other_name, dim);
  ANVIL_CHECK(counted.shape[dim] == index.numel(), op, ": ", counted_name, " has ", counted.shape[dim],
              " entries in dim ", dim, " for ", index.numel(), " indices");
}

}  // namespace

int64_t check_index_select(const View& out, const View& in, int64_t dim, const View& index) {
  dim = checked_dim("index_select", dim, in.dim());
  check_index_along_dim("index_select", dim, index, out, in, "input", out, "output");
  return dim;
}

int64_t check_index_add(const View& out, int64_t dim, const View& index, const View& src) {
  dim = checked_dim("index_add", dim, out.dim());
  check_index_along_dim("index_add", dim, index, out, src, "source", src, "source");
  return dim;
}

int64_t check_gather(const View& out, const View& in, int64_t dim, const View& index) {
  dim = checked_dim("gather", dim, in.dim());
  check_index_dtype("gather", index);
  ANVIL_CHECK(out.dtype == in.dtype, "gather: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  ANVIL_CHECK(index.dim() == in.dim(), "gather: index rank ", index.dim(), " differs from input rank ", in.dim());
  ANVIL_CHECK(out.shape == index.shape, "gather: output shape ", out.shape, " differs from index shape ", index.shape);
  for (int64_t d = 0; d < in.dim(); ++d)
    ANVIL_CHECK(d == dim || index.shape[d] <= in.shape[d], "gather: index shape ", index.shape,
                " is larger than input shape ", in.shape, " in dim ", d);
  return dim;
}

int64_t check_scatter_add(const View& out, int64_t dim, const View& index, const View& src) {
  return check_scatter("scatter_add", out, dim, index, src);
}

int64_t check_scatter(const char* op, const View& out, int64_t dim, const View& index, const View& src) {
  dim = checked_dim(op, dim, out.dim());
  check_index_dtype(op, index);
  ANVIL_CHECK(out.dtype == src.dtype, op, ": output dtype ", out.dtype, " differs from source dtype ", src.dtype);
  ANVIL_CHECK(index.dim() == out.dim() && src.dim() == out.dim(), op, ": ranks differ: output ", out.dim(), ", index ",
              index.dim(), ", source ", src.dim());
  for (int64_t d = 0; d < out.dim(); ++d)
    ANVIL_CHECK(index.shape[d] <= src.shape[d] && (d == dim || index.shape[d] <= out.shape[d]), op, ": index shape ",
                index.shape, " must not exceed source shape ", src.shape, " nor output shape ", out.shape,
                " (except in dim ", dim, " for the output)");
  return dim;
}

void check_nonzero(const View& out, const View& in) {
  ANVIL_CHECK(out.dtype == kInt64 && out.dim() == 2 && out.shape[1] == in.dim(),
              "nonzero: expected an int64 output [n, ", in.dim(), "] for input ", in.shape, ", got ", out.dtype, " ",
              out.shape);
}

}  // namespace anvil::shapes
