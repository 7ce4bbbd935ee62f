// index_select, index_add, gather and scatter_add (PyTorch semantics).
// Indices are int64 and checked before anything is written, so a bad index
// throws and leaves the output untouched. The accumulating ops never let two
// threads touch one output element: index_add splits the slice positions over
// threads and walks the indices serially; scatter_add splits the positions
// off the indexed dim and walks that dim serially.
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/strided_loop.h"

namespace anvil::cpu {
namespace {

template <size_t Bytes> struct bits_of;
template <> struct bits_of<1> { using type = uint8_t; };
template <> struct bits_of<2> { using type = uint16_t; };
template <> struct bits_of<4> { using type = uint32_t; };
template <> struct bits_of<8> { using type = uint64_t; };

template <typename T> using compute_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

View at_least_1d(const View& v) { return v.dim() > 0 ? v : View{v.data, v.dtype, {1}, {1}}; }

View without_dim(const View& v, int64_t dim) {
  View r = v;
  r.shape.erase(r.shape.begin() + dim);
  r.strides.erase(r.strides.begin() + dim);
  return r;
}

// The view restricted to the first shape[d] entries of every dim (gather and
// scatter_add may use an index smaller than the tensor it indexes).
View with_shape(const View& v, const Shape& shape) {
  View r = v;
  r.shape = shape;
  return r;
}

int64_t checked_dim(const char* op, int64_t dim, int64_t rank) {
  ANVIL_CHECK(dim >= -rank && dim < rank, op, ": dim ", dim, " out of range for a tensor of rank ", rank);
  return dim < 0 ? dim + rank : dim;
}

void check_index_dtype(const char* op, const View& index) {
  ANVIL_CHECK(index.dtype == kInt64, op, ": index must be int64, got ", index.dtype);
}

// Throws naming the first index outside [0, size).
void check_indices(const char* op, const View& index, int64_t dim, int64_t size) {
  bool bad = false;
  int64_t bad_value = 0;
  StridedLoop<1> loop({&index});
  loop.run({static_cast<char*>(index.data)}, 0, loop.numel(), [&](const StridedLoop<1>::Run& r) {
    for (int64_t j = 0; j < r.n && !bad; ++j) {
      const int64_t v = *reinterpret_cast<const int64_t*>(r.ptr[0] + j * r.stride[0]);
      if (v < 0 || v >= size) {
        bad = true;
        bad_value = v;
      }
    }
  });
  ANVIL_CHECK(!bad, op, ": index ", bad_value, " is out of range for dim ", dim, " of size ", size,
              " (valid indices are 0 to ", size - 1, ")");
}

std::vector<int64_t> read_index_list(const View& index) {
  std::vector<int64_t> values(static_cast<size_t>(index.numel()));
  const View dense{values.data(), kInt64, index.shape, contiguous_strides(index.shape)};
  map_elements<int64_t, int64_t>(dense, {&index}, [](int64_t v) { return v; });
  return values;
}

void check_same_except(const char* op, const View& a, const char* a_name, const View& b, const char* b_name,
                       int64_t dim) {
  ANVIL_CHECK(a.dim() == b.dim(), op, ": ", a_name, " rank ", a.dim(), " differs from ", b_name, " rank ", b.dim());
  for (int64_t d = 0; d < a.dim(); ++d)
    ANVIL_CHECK(d == dim || a.shape[d] == b.shape[d], op, ": ", a_name, " shape ", a.shape, " and ", b_name,
                " shape ", b.shape, " must agree except in dim ", dim);
}

}  // namespace

void CpuBackend::index_select(const View& out_, const View& in_, int64_t dim, const View& index) {
  const View out = at_least_1d(out_), in = at_least_1d(in_);
  dim = checked_dim("index_select", dim, in.dim());
  check_index_dtype("index_select", index);
  ANVIL_CHECK(index.dim() <= 1, "index_select: index must be 1-D, got shape ", index.shape);
  ANVIL_CHECK(out.dtype == in.dtype, "index_select: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  check_same_except("index_select", out, "output", in, "input", dim);
  ANVIL_CHECK(out.shape[dim] == index.numel(), "index_select: output has ", out.shape[dim], " entries in dim ", dim,
              " for ", index.numel(), " indices");
  check_indices("index_select", index, dim, in.shape[dim]);
  const std::vector<int64_t> idx = read_index_list(index);

  const View out_slice = without_dim(out, dim), in_slice = without_dim(in, dim);
  const StridedLoop<2> slice({&out_slice, &in_slice});
  const int64_t item = static_cast<int64_t>(itemsize(in.dtype));
  const int64_t out_step = out.strides[dim] * item, in_step = in.strides[dim] * item;
  char* out_base = static_cast<char*>(out.data);
  char* in_base = static_cast<char*>(in.data);
  const int64_t n_idx = static_cast<int64_t>(idx.size()), slice_n = slice.numel();
  visit_dtype(in.dtype, [&](auto tag) {
    using Bits = typename bits_of<sizeof(tag)>::type;
    parallel_for(n_idx, n_idx * slice_n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        slice.run({out_base + i * out_step, in_base + idx[i] * in_step}, 0, slice_n, [&](const StridedLoop<2>::Run& r) {
          if (r.stride[0] == item && r.stride[1] == item) {  // rows of an embedding table
            std::memcpy(r.ptr[0], r.ptr[1], static_cast<size_t>(r.n * item));
            return;
          }
          for (int64_t j = 0; j < r.n; ++j)
            *reinterpret_cast<Bits*>(r.ptr[0] + j * r.stride[0]) = *reinterpret_cast<const Bits*>(r.ptr[1] + j * r.stride[1]);
        });
      }
    });
  });
}

void CpuBackend::index_add(const View& out_, int64_t dim, const View& index, const View& src_) {
  const View out = at_least_1d(out_), src = at_least_1d(src_);
  dim = checked_dim("index_add", dim, out.dim());
  check_index_dtype("index_add", index);
  ANVIL_CHECK(index.dim() <= 1, "index_add: index must be 1-D, got shape ", index.shape);
  ANVIL_CHECK(out.dtype == src.dtype, "index_add: output dtype ", out.dtype, " differs from source dtype ", src.dtype);
  check_same_except("index_add", out, "output", src, "source", dim);
  ANVIL_CHECK(src.shape[dim] == index.numel(), "index_add: source has ", src.shape[dim], " entries in dim ", dim,
              " for ", index.numel(), " indices");
  check_indices("index_add", index, dim, out.shape[dim]);
  const std::vector<int64_t> idx = read_index_list(index);

  const View out_slice = without_dim(out, dim), src_slice = without_dim(src, dim);
  const StridedLoop<2> slice({&out_slice, &src_slice});
  const int64_t item = static_cast<int64_t>(itemsize(out.dtype));
  const int64_t out_step = out.strides[dim] * item, src_step = src.strides[dim] * item;
  char* out_base = static_cast<char*>(out.data);
  char* src_base = static_cast<char*>(src.data);
  const int64_t n_idx = static_cast<int64_t>(idx.size()), slice_n = slice.numel();
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      fail("index_add: not supported for dtype bool");
    } else {
      // Each thread owns a range of positions within a slice, in every slice.
      parallel_for(slice_n, n_idx * slice_n, [&](int64_t begin, int64_t end) {
        for (int64_t i = 0; i < n_idx; ++i) {
          slice.run({out_base + idx[i] * out_step, src_base + i * src_step}, begin, end, [&](const StridedLoop<2>::Run& r) {
            for (int64_t j = 0; j < r.n; ++j) {
              T& o = *reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]);
              o = T(C(o) + C(*reinterpret_cast<const T*>(r.ptr[1] + j * r.stride[1])));
            }
          });
        }
      });
    }
  });
}

void CpuBackend::gather(const View& out_, const View& in_, int64_t dim, const View& index_) {
  const View out = at_least_1d(out_), in = at_least_1d(in_), index = at_least_1d(index_);
  dim = checked_dim("gather", dim, in.dim());
  check_index_dtype("gather", index);
  ANVIL_CHECK(out.dtype == in.dtype, "gather: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  ANVIL_CHECK(index.dim() == in.dim(), "gather: index rank ", index.dim(), " differs from input rank ", in.dim());
  ANVIL_CHECK(out.shape == index.shape, "gather: output shape ", out.shape, " differs from index shape ", index.shape);
  for (int64_t d = 0; d < in.dim(); ++d)
    ANVIL_CHECK(d == dim || index.shape[d] <= in.shape[d], "gather: index shape ", index.shape,
                " is larger than input shape ", in.shape, " in dim ", d);
  check_indices("gather", index, dim, in.shape[dim]);

  // The input walked like the index, except that the gathered dim does not move.
  View in_walk = with_shape(in, index.shape);
  in_walk.strides[dim] = 0;
  const int64_t item = static_cast<int64_t>(itemsize(in.dtype)), in_step = in.strides[dim] * item;
  const StridedLoop<3> loop({&out, &index, &in_walk});
  visit_dtype(in.dtype, [&](auto tag) {
    using Bits = typename bits_of<sizeof(tag)>::type;
    loop.run_parallel({static_cast<char*>(out.data), static_cast<char*>(index.data), static_cast<char*>(in.data)},
                      [&](const StridedLoop<3>::Run& r) {
      for (int64_t j = 0; j < r.n; ++j) {
        const int64_t i = *reinterpret_cast<const int64_t*>(r.ptr[1] + j * r.stride[1]);
        *reinterpret_cast<Bits*>(r.ptr[0] + j * r.stride[0]) =
            *reinterpret_cast<const Bits*>(r.ptr[2] + j * r.stride[2] + i * in_step);
      }
    });
  });
}

void CpuBackend::scatter_add(const View& out_, int64_t dim, const View& index_, const View& src_) {
  const View out = at_least_1d(out_), index = at_least_1d(index_), src = at_least_1d(src_);
  dim = checked_dim("scatter_add", dim, out.dim());
  check_index_dtype("scatter_add", index);
  ANVIL_CHECK(out.dtype == src.dtype, "scatter_add: output dtype ", out.dtype, " differs from source dtype ", src.dtype);
  ANVIL_CHECK(index.dim() == out.dim() && src.dim() == out.dim(), "scatter_add: ranks differ: output ", out.dim(),
              ", index ", index.dim(), ", source ", src.dim());
  for (int64_t d = 0; d < out.dim(); ++d)
    ANVIL_CHECK(index.shape[d] <= src.shape[d] && (d == dim || index.shape[d] <= out.shape[d]), "scatter_add: index shape ",
                index.shape, " must not exceed source shape ", src.shape, " nor output shape ", out.shape,
                " (except in dim ", dim, " for the output)");
  check_indices("scatter_add", index, dim, out.shape[dim]);

  // Positions off the scattered dim are independent; along it, serial.
  const View index_rest = without_dim(index, dim);
  const View src_rest = without_dim(with_shape(src, index.shape), dim);
  const View out_rest = without_dim(with_shape(out, index.shape), dim);
  const StridedLoop<3> loop({&out_rest, &index_rest, &src_rest});
  const int64_t len = index.shape[dim];
  const int64_t item = static_cast<int64_t>(itemsize(out.dtype));
  const int64_t out_step = out.strides[dim] * item, src_step = src.strides[dim] * item, index_step = index.strides[dim] * 8;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      fail("scatter_add: not supported for dtype bool");
    } else {
      loop.run_parallel({static_cast<char*>(out.data), static_cast<char*>(index.data), static_cast<char*>(src.data)},
                        [&](const StridedLoop<3>::Run& r) {
        for (int64_t j = 0; j < r.n; ++j) {
          char* o = r.ptr[0] + j * r.stride[0];
          const char* ix = r.ptr[1] + j * r.stride[1];
          const char* s = r.ptr[2] + j * r.stride[2];
          for (int64_t k = 0; k < len; ++k) {
            const int64_t i = *reinterpret_cast<const int64_t*>(ix + k * index_step);
            T& dst = *reinterpret_cast<T*>(o + i * out_step);
            dst = T(C(dst) + C(*reinterpret_cast<const T*>(s + k * src_step)));
          }
        }
      }, len);
    }
  });
}

}  // namespace anvil::cpu
