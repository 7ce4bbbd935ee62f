#pragma once
// The reduction machinery shared by reduce.cu and its per-family files
// (reduce_sum.cu, reduce_extreme.cu, reduce_arg.cu, reduce_var.cu; split so
// nvcc compiles them in parallel). Internal: host + device code.
//
// The plan is the CPU's (kernels/cpu/reduce.cpp): kept
// and reduced dims, each sorted by input stride and merged where contiguous.
// Three kernels:
//   - rows: a reduced dim moves fastest (sum over the last dim, full sums).
//     Short rows: one warp per output; long rows: one block per output, and
//     when there are too few outputs to fill the GPU each row is split over
//     gridDim.y blocks whose partial accumulators a second kernel folds
//     (two stages, no atomics, deterministic).
//   - columns: a kept dim moves fastest (column sums, bias gradients):
//     threadIdx.x runs along that kept dim (coalesced), threadIdx.y over the
//     reduced elements, folded in shared memory; long columns split likewise.
//   - finish: folds the split partials of each output (one warp per output).
// Any layout is handled by the offset calculators (no scratch copy needed);
// the reduced elements' offsets need no division when the reduced dims merge
// into one, and a unit-stride reduced dim is read with 16-byte vector loads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/device/block_reduce.cuh"
#include "kernels/cuda/device/offset_calculator.cuh"
#include "kernels/cuda/device/reduce_ops.cuh"
#include "kernels/cuda/device/vector_access.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/elementwise_launch.cuh"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/shapes/reduce_plan.h"

namespace anvil::cuda {
using shapes::op_name;  // "sum", "mean", ... (both backends' names)
}  // namespace anvil::cuda

namespace anvil::cuda::reduce_detail {

inline constexpr int kRowThreads = 256;
inline constexpr int kColX = 32, kColY = 16;
// Rows up to this long get one warp each (many short rows); longer rows get
// whole blocks, split across several when there are too few rows to fill the GPU.
inline constexpr int64_t kWarpRowMaxLength = 2048;

struct ReduceGeometry {
  dev::OffsetCalculator<2> kept;  // output index -> {input offset, output offset}
  dev::OffsetCalculator<1> red;  // reduced index -> input offset
  int64_t n_out = 1, n_red = 1;
  int splits = 1;  // blocks sharing one output (gridDim.y)
  int64_t chunk = 0;  // reduced elements per split
};

template <typename T, typename R>
__device__ __forceinline__ void store_result(void* out, int64_t off, DType dtype, R v) {
  switch (dtype) {
    case DType::Float32:
      static_cast<float*>(out)[off] = dev::cast<float>(v);
      break;
    case DType::Float64:
      static_cast<double*>(out)[off] = dev::cast<double>(v);
      break;
    case DType::Float16:
      static_cast<__half*>(out)[off] = dev::cast<__half>(v);
      break;
    case DType::BFloat16:
      static_cast<__nv_bfloat16*>(out)[off] = dev::cast<__nv_bfloat16>(v);
      break;
    case DType::Int32:
      static_cast<int32_t*>(out)[off] = dev::cast<int32_t>(v);
      break;
    case DType::Int64:
      static_cast<int64_t*>(out)[off] = dev::cast<int64_t>(v);
      break;
    case DType::UInt8:
      static_cast<uint8_t*>(out)[off] = dev::cast<uint8_t>(v);
      break;
    case DType::Bool:
      static_cast<bool*>(out)[off] = dev::cast<bool>(v);
      break;
  }
}

__device__ __forceinline__ int64_t red_offset(const dev::OffsetCalculator<1>& red, int64_t r) {
  return red.ndim <= 1 ? r * red.strides[0][0] : red.offset(r);
}

// Folds elements [begin, end) of a row into acc, thread `tid` of `nthreads`
// taking its share. A unit-stride row (the contiguous last-dim case) is read
// with 16-byte vector loads after a scalar head that reaches 16-byte
// alignment; other rows go through the reduced dims' offset calculator.
template <typename Op, typename T>
__device__ __forceinline__ typename Op::Acc fold_row(const Op& op, typename Op::Acc acc, const T* row,
                                                     const dev::OffsetCalculator<1>& red, int64_t begin, int64_t end,
                                                     int tid, int nthreads) {
  if (red.ndim == 1 && red.strides[0][0] == 1) {
    constexpr int V = dev::vec_size_v<T>;
    const T* p = row + begin;
    const int64_t n = end - begin;
    const auto misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) % dev::kVecBytes);
    int64_t head = misalign == 0 ? 0 : (dev::kVecBytes - misalign) / static_cast<int64_t>(sizeof(T));
    head = head < n ? head : n;
    for (int64_t r = tid; r < head; r += nthreads) acc = op.combine(acc, op.lift(p[r], begin + r));
    const int64_t nvec = (n - head) / V;
    const T* body = p + head;
    for (int64_t v = tid; v < nvec; v += nthreads) {
      const auto x = dev::load_vec<V>(body + v * V);
#pragma unroll
      for (int j = 0; j < V; ++j) acc = op.combine(acc, op.lift(x.v[j], begin + head + v * V + j));
    }
    for (int64_t r = head + nvec * V + tid; r < n; r += nthreads) acc = op.combine(acc, op.lift(p[r], begin + r));
    return acc;
  }
  for (int64_t r = begin + tid; r < end; r += nthreads) acc = op.combine(acc, op.lift(row[red_offset(red, r)], r));
  return acc;
}

// Either the final value of output o, or partial s of it.
template <typename T, typename Op>
__device__ __forceinline__ void emit(const Op& op, const ReduceGeometry& g, void* out, DType out_dtype,
                                     typename Op::Acc* partial, int64_t o, int s, const typename Op::Acc& acc) {
  if (g.splits > 1) {
    partial[o * g.splits + s] = acc;
  } else {
    int64_t off[2];
    g.kept.offsets(o, off);
    store_result<T>(out, off[1], out_dtype, op.finish(acc, g.n_red));
  }
}

// One warp per output (rows of up to a few thousand elements).
template <typename T, typename Op>
__global__ void __launch_bounds__(kRowThreads)
    reduce_rows_warp(Op op, const T* in, void* out, DType out_dtype, ReduceGeometry g) {
  using Acc = typename Op::Acc;
  const int lane = threadIdx.x & 31, warps = blockDim.x / 32;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32; o < g.n_out;
       o += static_cast<int64_t>(gridDim.x) * warps) {
    int64_t off[2];
    g.kept.offsets(o, off);
    const T* row = in + off[0];
    Acc acc = fold_row(op, op.identity(), row, g.red, 0, g.n_red, lane, 32);
    acc = dev::warp_reduce(acc, dev::CombineWith<Op>{op});
    if (lane == 0) store_result<T>(out, off[1], out_dtype, op.finish(acc, g.n_red));
  }
}

// One block per (output, split).
template <typename T, typename Op>
__global__ void __launch_bounds__(kRowThreads)
    reduce_rows_block(Op op, const T* in, void* out, DType out_dtype, typename Op::Acc* partial, ReduceGeometry g) {
  using Acc = typename Op::Acc;
  const int s = blockIdx.y;
  const int64_t begin = s * g.chunk, end = begin + g.chunk < g.n_red ? begin + g.chunk : g.n_red;
  for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
    int64_t off[2];
    g.kept.offsets(o, off);
    const T* row = in + off[0];
    Acc acc = fold_row(op, op.identity(), row, g.red, begin, end, threadIdx.x, blockDim.x);
    acc = dev::block_reduce(acc, dev::CombineWith<Op>{op});
    if (threadIdx.x == 0) emit<T>(op, g, out, out_dtype, partial, o, s, acc);
  }
}

// Columns: kept dim 0 of the geometry (size ncol, input stride col_stride) runs along threadIdx.x.
template <typename T, typename Op>
__global__ void __launch_bounds__(kColX* kColY)
    reduce_columns(Op op, const T* in, void* out, DType out_dtype, typename Op::Acc* partial, ReduceGeometry g,
                   int64_t ncol, int64_t col_tiles) {
  using Acc = typename Op::Acc;
  __shared__ __align__(16) unsigned char raw[kColY * kColX * sizeof(Acc)];
  Acc* tile = reinterpret_cast<Acc*>(raw);
  const int s = blockIdx.y;
  const int64_t begin = s * g.chunk, end = begin + g.chunk < g.n_red ? begin + g.chunk : g.n_red;
  const int64_t n_items = (g.n_out / ncol) * col_tiles;
  for (int64_t item = blockIdx.x; item < n_items; item += gridDim.x) {
    const int64_t j = (item % col_tiles) * kColX + threadIdx.x;
    const int64_t o = (item / col_tiles) * ncol + j;  // kept dim 0 is the innermost of the output index
    Acc acc = op.identity();
    if (j < ncol) {
      int64_t off[2];
      g.kept.offsets(o, off);
      const T* col = in + off[0];
      for (int64_t r = begin + threadIdx.y; r < end; r += kColY)
        acc = op.combine(acc, op.lift(col[red_offset(g.red, r)], r));
    }
    tile[threadIdx.y * kColX + threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < ncol) {
      Acc total = tile[threadIdx.x];
      for (int y = 1; y < kColY; ++y) total = op.combine(total, tile[y * kColX + threadIdx.x]);
      emit<T>(op, g, out, out_dtype, partial, o, s, total);
    }
    __syncthreads();
  }
}

// Second stage: one warp folds the splits of one output.
template <typename T, typename Op>
__global__ void __launch_bounds__(kRowThreads)
    reduce_finish(Op op, const typename Op::Acc* partial, void* out, DType out_dtype, ReduceGeometry g) {
  using Acc = typename Op::Acc;
  const int lane = threadIdx.x & 31, warps = blockDim.x / 32;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32; o < g.n_out;
       o += static_cast<int64_t>(gridDim.x) * warps) {
    Acc acc = op.identity();
    for (int s = lane; s < g.splits; s += 32) acc = op.combine(acc, partial[o * g.splits + s]);
    acc = dev::warp_reduce(acc, dev::CombineWith<Op>{op});
    if (lane == 0) {
      int64_t off[2];
      g.kept.offsets(o, off);
      store_result<T>(out, off[1], out_dtype, op.finish(acc, g.n_red));
    }
  }
}

// ---- host side ----

// The kept and reduced dims, coalesced, innermost first: the CPU's plan too.
using Dim = shapes::ReduceDim;
using Plan = shapes::ReducePlan;

inline ReduceGeometry make_geometry(const Plan& plan) {
  ReduceGeometry g;
  ANVIL_CHECK(plan.kept.size() <= static_cast<size_t>(dev::kMaxDims) &&
                  plan.reduced.size() <= static_cast<size_t>(dev::kMaxDims),
              "reduce: more than ", dev::kMaxDims, " kept or reduced dims that cannot be merged");
  for (const Dim& d : plan.kept) {
    g.kept.sizes[g.kept.ndim] = d.size;
    g.kept.strides[g.kept.ndim][0] = d.in_stride;
    g.kept.strides[g.kept.ndim][1] = d.out_stride;
    ++g.kept.ndim;
  }
  for (const Dim& d : plan.reduced) {
    g.red.sizes[g.red.ndim] = d.size;
    g.red.strides[g.red.ndim][0] = d.in_stride;
    ++g.red.ndim;
  }
  g.kept.index32 = plan.n_out <= static_cast<int64_t>(UINT32_MAX);
  g.red.index32 = plan.n_red <= static_cast<int64_t>(UINT32_MAX);
  g.n_out = plan.n_out;
  g.n_red = plan.n_red;
  g.chunk = plan.n_red;
  return g;
}

struct Launch {
  CudaRuntime& backend;
  cudaStream_t stream;
  int device;
};

// At most this many blocks share one output (their partials are combined by reduce_finish).
inline constexpr int64_t kMaxSplits = 1024;

// Splits so that about `target` blocks run, each with at least `min_chunk` elements.
inline int choose_splits(int64_t blocks, int64_t n_red, int64_t target, int64_t min_chunk) {
  if (blocks >= target) return 1;
  const int64_t by_occupancy = (target + blocks - 1) / blocks;
  const int64_t by_work = std::max<int64_t>(1, n_red / min_chunk);
  return static_cast<int>(std::clamp<int64_t>(std::min(by_occupancy, by_work), 1, kMaxSplits));
}

template <typename T, typename Op>
void run_reduce(const Op& op, const Plan& plan, const View& out, const View& in, const Launch& l) {
  using Acc = typename Op::Acc;
  ReduceGeometry g = make_geometry(plan);
  const int64_t wave = resident_blocks(kRowThreads, l.device);
  const T* src = in.ptr<const T>();
  if (plan.by_columns()) {
    const int64_t ncol = plan.kept[0].size, col_tiles = (ncol + kColX - 1) / kColX;
    const int64_t items = (plan.n_out / ncol) * col_tiles;
    g.splits = choose_splits(items, plan.n_red, wave, 16 * kColY);
    g.chunk = (plan.n_red + g.splits - 1) / g.splits;
    const Scratch partials(l.backend, l.device, g.splits > 1 ? sizeof(Acc) * plan.n_out * g.splits : 0);
    Acc* partial = partials.as<Acc>();
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(items, INT32_MAX)), static_cast<unsigned>(g.splits));
    launch_kernel(reduce_columns<T, Op>, grid, dim3(kColX, kColY), 0, l.stream)(op, src, out.data, out.dtype, partial,
                                                                                g, ncol, col_tiles);
    ANVIL_CUDA_CHECK_LAUNCH("reduce (columns)");
    if (g.splits > 1) {
      launch_kernel(reduce_finish<T, Op>, wave_blocks(plan.n_out * 32, kRowThreads, l.device), kRowThreads, 0,
                    l.stream)(op, partial, out.data, out.dtype, g);
      ANVIL_CUDA_CHECK_LAUNCH("reduce (finish)");
    }
    return;
  }
  if (plan.n_red <= kWarpRowMaxLength && plan.n_out > 1) {  // short rows: a warp each
    launch_kernel(reduce_rows_warp<T, Op>, wave_blocks(plan.n_out * 32, kRowThreads, l.device), kRowThreads, 0,
                  l.stream)(op, src, out.data, out.dtype, g);
    ANVIL_CUDA_CHECK_LAUNCH("reduce (rows, warp)");
    return;
  }
  g.splits = choose_splits(plan.n_out, plan.n_red, wave, 16 * kRowThreads);
  g.chunk = (plan.n_red + g.splits - 1) / g.splits;
  const Scratch partials(l.backend, l.device, g.splits > 1 ? sizeof(Acc) * plan.n_out * g.splits : 0);
  Acc* partial = partials.as<Acc>();
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(plan.n_out, INT32_MAX)), static_cast<unsigned>(g.splits));
  launch_kernel(reduce_rows_block<T, Op>, grid, kRowThreads, 0, l.stream)(op, src, out.data, out.dtype, partial, g);
  ANVIL_CUDA_CHECK_LAUNCH("reduce (rows, block)");
  if (g.splits > 1) {
    launch_kernel(reduce_finish<T, Op>, wave_blocks(plan.n_out * 32, kRowThreads, l.device), kRowThreads, 0, l.stream)(
        op, partial, out.data, out.dtype, g);
    ANVIL_CUDA_CHECK_LAUNCH("reduce (finish)");
  }
}

// One family's dispatch over the input dtype (reduce_<family>.cu).
void reduce_sum_family(ReduceOp op, const Plan& plan, const View& out, const View& in, const ReduceParams& p,
                       const Launch& l);
void reduce_extreme_family(ReduceOp op, const Plan& plan, const View& out, const View& in, const ReduceParams& p,
                           const Launch& l);
void reduce_arg_family(ReduceOp op, const Plan& plan, const View& out, const View& in, const Launch& l);
void reduce_var_family(const Plan& plan, const View& out, const View& in, const ReduceParams& p, const Launch& l);

}  // namespace anvil::cuda::reduce_detail
