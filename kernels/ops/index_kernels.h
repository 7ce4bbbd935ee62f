#pragma once
// Indexing along one dim with int64 index tensors (out-of-range indices throw
// on the CPU; on CUDA they are reported by a device-side check).
#include <cstdint>

#include "kernels/view.h"

namespace anvil {

// scatter's `reduce`: overwrite (None), sum (Add) or product (Multiply).
enum class ScatterReduce : uint8_t { None, Add, Multiply };

namespace kernel {

struct IndexSelect {
  static constexpr const char* name = "index_select";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& in, int64_t dim, const View& index);
};

struct IndexAdd {
  static constexpr const char* name = "index_add";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, int64_t dim, const View& index, const View& src);
};

struct Gather {
  static constexpr const char* name = "gather";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& in, int64_t dim, const View& index);
};

// out[..index[i][j]..][j] = src[i][j] along dim (or += / *=). With repeated
// indices and reduce None the last write in index order wins on the CPU; on
// CUDA any one of them (as PyTorch). scatter_add is reduce Add.
struct Scatter {
  static constexpr const char* name = "scatter";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, int64_t dim, const View& index, const View& src, ScatterReduce reduce);
};

// out int64 [n, in.dim()]: the coordinates of in's n nonzero elements in
// row-major order. The caller counts them first (it sizes out).
struct Nonzero {
  static constexpr const char* name = "nonzero";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& in);
};

}  // namespace kernel
}  // namespace anvil
