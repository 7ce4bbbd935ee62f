// index_select, index_add, gather and scatter_add (PyTorch semantics).
// Indices are int64 and checked before anything is written, so a bad index
// throws and leaves the output untouched. The accumulating ops never let two
// threads touch one output element: index_add splits the slice positions over
// threads and walks the indices serially; scatter_add splits the positions
// off the indexed dim and walks that dim serially. scatter (overwrite or
// product) walks the same way, so the last of repeated indices wins.
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/index_kernels.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/shapes/bits_of.h"
#include "kernels/shapes/index_checks.h"

namespace anvil::cpu {
namespace {

using shapes::bits_of;

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

using shapes::at_least_1d;
using shapes::without_dim;

// The view restricted to the first shape[d] entries of every dim (gather and
// scatter_add may use an index smaller than the tensor it indexes).
View with_shape(const View& v, const Shape& shape) {
  View r = v;
  r.shape = shape;
  return r;
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

}  // namespace

void index_select(const View& out_, const View& in_, int64_t dim, const View& index) {
  const View out = at_least_1d(out_), in = at_least_1d(in_);
  dim = shapes::check_index_select(out, in, dim, index);
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
            *reinterpret_cast<Bits*>(r.ptr[0] + j * r.stride[0]) =
                *reinterpret_cast<const Bits*>(r.ptr[1] + j * r.stride[1]);
        });
      }
    });
  });
}

void index_add(const View& out_, int64_t dim, const View& index, const View& src_) {
  const View out = at_least_1d(out_), src = at_least_1d(src_);
  dim = shapes::check_index_add(out, dim, index, src);
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
          slice.run({out_base + idx[i] * out_step, src_base + i * src_step}, begin, end,
                    [&](const StridedLoop<2>::Run& r) {
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

void gather(const View& out_, const View& in_, int64_t dim, const View& index_) {
  const View out = at_least_1d(out_), in = at_least_1d(in_), index = at_least_1d(index_);
  dim = shapes::check_gather(out, in, dim, index);
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

void scatter_add(const View& out_, int64_t dim, const View& index_, const View& src_) {
  const View out = at_least_1d(out_), index = at_least_1d(index_), src = at_least_1d(src_);
  dim = shapes::check_scatter_add(out, dim, index, src);
  check_indices("scatter_add", index, dim, out.shape[dim]);

  // Positions off the scattered dim are independent; along it, serial.
  const View index_rest = without_dim(index, dim);
  const View src_rest = without_dim(with_shape(src, index.shape), dim);
  const View out_rest = without_dim(with_shape(out, index.shape), dim);
  const StridedLoop<3> loop({&out_rest, &index_rest, &src_rest});
  const int64_t len = index.shape[dim];
  const int64_t item = static_cast<int64_t>(itemsize(out.dtype));
  const int64_t out_step = out.strides[dim] * item, src_step = src.strides[dim] * item,
                index_step = index.strides[dim] * 8;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      fail("scatter_add: not supported for dtype bool");
    } else {
      loop.run_parallel(
          {static_cast<char*>(out.data), static_cast<char*>(index.data), static_cast<char*>(src.data)},
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
          },
          len);
    }
  });
}

void scatter(const View& out_, int64_t dim, const View& index_, const View& src_, ScatterReduce reduce) {
  if (reduce == ScatterReduce::Add) return scatter_add(out_, dim, index_, src_);
  const View out = at_least_1d(out_), index = at_least_1d(index_), src = at_least_1d(src_);
  dim = shapes::check_scatter("scatter", out, dim, index, src);
  check_indices("scatter", index, dim, out.shape[dim]);

  const View index_rest = without_dim(index, dim);
  const View src_rest = without_dim(with_shape(src, index.shape), dim);
  const View out_rest = without_dim(with_shape(out, index.shape), dim);
  const StridedLoop<3> loop({&out_rest, &index_rest, &src_rest});
  const int64_t len = index.shape[dim];
  const int64_t item = static_cast<int64_t>(itemsize(out.dtype));
  const int64_t out_step = out.strides[dim] * item, src_step = src.strides[dim] * item,
                index_step = index.strides[dim] * 8;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      if (reduce == ScatterReduce::Multiply) fail("scatter: reduce='multiply' is not supported for dtype bool");
    }
    loop.run_parallel(
        {static_cast<char*>(out.data), static_cast<char*>(index.data), static_cast<char*>(src.data)},
        [&](const StridedLoop<3>::Run& r) {
          for (int64_t j = 0; j < r.n; ++j) {
            char* o = r.ptr[0] + j * r.stride[0];
            const char* ix = r.ptr[1] + j * r.stride[1];
            const char* s = r.ptr[2] + j * r.stride[2];
            for (int64_t k = 0; k < len; ++k) {
              const int64_t i = *reinterpret_cast<const int64_t*>(ix + k * index_step);
              T& dst = *reinterpret_cast<T*>(o + i * out_step);
              const T v = *reinterpret_cast<const T*>(s + k * src_step);
              if constexpr (std::is_same_v<T, bool>)
                dst = v;
              else
                dst = reduce == ScatterReduce::None ? v : T(C(dst) * C(v));
            }
          }
        },
        len);
  });
}

ANVIL_REGISTER_KERNEL(kernel::IndexSelect, CPU, index_select);
ANVIL_REGISTER_KERNEL(kernel::IndexAdd, CPU, index_add);
ANVIL_REGISTER_KERNEL(kernel::Gather, CPU, gather);
ANVIL_REGISTER_KERNEL(kernel::Scatter, CPU, scatter);

}  // namespace anvil::cpu
