// index_select, index_add, gather and scatter_add (PyTorch semantics, as
// kernels/cpu/indexing.cpp).
//
// - index_select on contiguous tensors copies whole rows [outer, index, inner]
//   in the widest unit (up to 16 bytes) the row size and alignment allow: the
//   embedding forward. Other layouts take an element-wise strided kernel.
// - index_add (embedding backward) and scatter_add accumulate with atomics.
//   With use_deterministic_algorithms(true) (core/base/determinism.h) they do
//   not: index_add sorts the indices (CUB radix sort, stable) and lets one
//   block own each distinct index, summing its source rows in index order;
//   scatter_add lets one thread own each position off the scattered dim and
//   walk that dim serially, as the CPU does. Both give run-to-run identical
//   results.
// - Indices are checked on the device; see kernels/cuda/index_errors.h for
//   how a bad one becomes an anvil::Error without a host synchronisation.
#include <cuda_runtime_api.h>

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>

#include "core/base/determinism.h"
#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/index_kernels.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/index_errors.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cuda/launch/strided_offsets.h"
#include "kernels/shapes/index_checks.h"

namespace anvil::cuda {

// --- the error record (see index_errors.h) ---

namespace {
struct RecordSlot {
  kit::IndexErrorRecord* host = nullptr;
  kit::IndexErrorRecord* device = nullptr;
};
// One record per GPU for the life of the process, like the allocators.
std::mutex g_records_mutex;
std::map<int, RecordSlot> g_records;

const char* index_op_name(int op) {
  switch (op) {
    case kit::kIndexSelect:
      return "index_select";
    case kit::kIndexAdd:
      return "index_add";
    case kit::kGather:
      return "gather";
    case kit::kScatterAdd:
      return "scatter_add";
    case kit::kCrossEntropy:
      return "cross_entropy";
    case kit::kScatter:
      return "scatter";
    default:
      return "indexing";
  }
}
}  // namespace

kit::IndexErrorRecord* index_error_record(int device) {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  RecordSlot& slot = g_records[device];
  if (!slot.host) {
    DeviceGuard guard(device);
    void* host = nullptr;
    ANVIL_CUDA_CHECK(cudaHostAlloc(&host, sizeof(kit::IndexErrorRecord), cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(host, 0, sizeof(kit::IndexErrorRecord));
    void* dev = nullptr;
    ANVIL_CUDA_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
    slot.host = static_cast<kit::IndexErrorRecord*>(host);
    slot.device = static_cast<kit::IndexErrorRecord*>(dev);
  }
  return slot.device;
}

void raise_pending_index_error(int device) {
  kit::IndexErrorRecord rec{};
  {
    std::lock_guard<std::mutex> lock(g_records_mutex);
    auto it = g_records.find(device);
    if (it == g_records.end()) return;
    kit::IndexErrorRecord* h = it->second.host;
    if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != 2) return;
    rec = *h;
    __atomic_store_n(&h->state, 0, __ATOMIC_RELEASE);
  }
  const char* op = index_op_name(rec.op);
  if (rec.op == kit::kCrossEntropy)
    fail(op, " (on cuda:", device, "): target ", rec.value, " is out of range for ", rec.size,
         " classes (expected 0 <= target < ", rec.size, " or ignore_index); found on the GPU by an earlier call");
  fail(op, " (on cuda:", device, "): index ", rec.value, " is out of range for dim ", rec.dim, " of size ", rec.size,
       " (valid indices are 0 to ", rec.size - 1, "); found on the GPU by an earlier call");
}

namespace {

using kit::IndexErrorRecord;

constexpr int kThreads = 256;

using shapes::at_least_1d;
using shapes::without_dim;

int64_t prod(const Shape& s, int64_t from, int64_t to) {
  int64_t n = 1;
  for (int64_t d = from; d < to; ++d) n *= s[d];
  return n;
}

template <typename T> __device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    // No byte atomics: compare-and-swap the aligned word that holds the byte.
    unsigned* word = reinterpret_cast<unsigned*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
    const unsigned shift = (reinterpret_cast<uintptr_t>(p) & 3u) * 8u;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const unsigned byte = ((assumed >> shift) + v) & 0xffu;
      old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (byte << shift));
    } while (assumed != old);
  } else {
    atomicAdd(p, v);  // float, double, __half (sm_70+), __nv_bfloat16 (sm_80+)
  }
}

// Plain (owned) accumulation with the CPU's rounding: T(C(o) + C(s)).
template <typename T> __device__ __forceinline__ void owned_add(T* p, T v) {
  using C = dev::compute_t<T>;
  *p = dev::cast<T>(static_cast<C>(dev::cast<C>(*p) + dev::cast<C>(v)));
}

__device__ __forceinline__ bool bad_index(int64_t v, int64_t size) { return v < 0 || v >= size; }

// --- index_select ---

// Contiguous in [outer, in_dim, inner] and out [outer, nidx, inner] as rows of
// `units` elements of U (the widest unit that divides the row bytes).
template <typename U>
__global__ void select_rows_kernel(U* out, const U* in, const int64_t* index, int64_t index_stride, int64_t outer,
                                   int64_t nidx, int64_t in_dim, int64_t units, IndexErrorRecord* rec, int dim) {
  const int64_t rows = outer * nidx;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t o = r / nidx, i = r - o * nidx;
    const int64_t v = index[i * index_stride];
    if (bad_index(v, in_dim)) {
      if (threadIdx.x == 0) kit::record_index_error(rec, kit::kIndexSelect, v, in_dim, dim);
      continue;
    }
    const U* src = in + (o * in_dim + v) * units;
    U* dst = out + r * units;
    for (int64_t k = threadIdx.x; k < units; k += blockDim.x) dst[k] = src[k];
  }
}

// Any layout: element e of out (walked by `offs`: out strides, in strides with
// the indexed dim's stride 0) takes index[(e / inner) % nidx].
template <typename U>
__global__ void select_strided_kernel(U* out, const U* in, const int64_t* index, int64_t index_stride,
                                      dev::OffsetCalculator<2> offs, int64_t n, int64_t inner, int64_t nidx,
                                      int64_t in_dim, int64_t in_step, IndexErrorRecord* rec, int dim) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t v = index[((e / inner) % nidx) * index_stride];
    if (bad_index(v, in_dim)) {
      kit::record_index_error(rec, kit::kIndexSelect, v, in_dim, dim);
      continue;
    }
    int64_t off[2];
    offs.offsets(e, off);
    out[off[0]] = in[off[1] + v * in_step];
  }
}

template <size_t Bytes> struct UnitOf;
template <> struct UnitOf<1> { using type = uint8_t; };
template <> struct UnitOf<2> { using type = uint16_t; };
template <> struct UnitOf<4> { using type = uint32_t; };
template <> struct UnitOf<8> { using type = uint64_t; };
template <> struct UnitOf<16> { using type = uint4; };

template <size_t Bytes>
void launch_select_rows(cudaStream_t s, const View& out, const View& in, const View& index, int64_t outer, int64_t nidx,
                        int64_t in_dim, int64_t row_bytes, IndexErrorRecord* rec, int dim) {
  using U = typename UnitOf<Bytes>::type;
  const int64_t units = row_bytes / static_cast<int64_t>(Bytes);
  const int threads = units >= 256 ? 256 : units >= 64 ? 64 : 32;
  const unsigned grid = capped_blocks(outer * nidx, 1, kMaxRowBlocks);
  launch_kernel(select_rows_kernel<U>, grid, threads, 0, s)(static_cast<U*>(out.data), static_cast<const U*>(in.data),
                                                            static_cast<const int64_t*>(index.data), index.strides[0],
                                                            outer, nidx, in_dim, units, rec, dim);
  ANVIL_CUDA_CHECK_LAUNCH("select_rows_kernel");
}

// --- index_add ---

template <typename T>
__global__ void index_add_rows_kernel(T* out, const T* src, const int64_t* index, int64_t index_stride, int64_t outer,
                                      int64_t nidx, int64_t out_dim, int64_t inner, IndexErrorRecord* rec, int dim) {
  const int64_t rows = outer * nidx;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t o = r / nidx, i = r - o * nidx;
    const int64_t v = index[i * index_stride];
    if (bad_index(v, out_dim)) {
      if (threadIdx.x == 0) kit::record_index_error(rec, kit::kIndexAdd, v, out_dim, dim);
      continue;
    }
    T* dst = out + (o * out_dim + v) * inner;
    const T* from = src + r * inner;
    for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) atomic_add(dst + k, from[k]);
  }
}

// Element e of src (walked by `offs`: out strides with the dim's stride 0, src strides).
template <typename T>
__global__ void index_add_strided_kernel(T* out, const T* src, const int64_t* index, int64_t index_stride,
                                         dev::OffsetCalculator<2> offs, int64_t n, int64_t inner, int64_t nidx,
                                         int64_t out_dim, int64_t out_step, IndexErrorRecord* rec, int dim) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t v = index[((e / inner) % nidx) * index_stride];
    if (bad_index(v, out_dim)) {
      kit::record_index_error(rec, kit::kIndexAdd, v, out_dim, dim);
      continue;
    }
    int64_t off[2];
    offs.offsets(e, off);
    atomic_add(out + off[0] + v * out_step, src[off[1]]);
  }
}

__global__ void iota_kernel(int64_t* v, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    v[i] = i;
}

// Deterministic: keys are the sorted indices, perm the source rows in stable
// order. The block at the first position of each run of equal keys sums that
// run's rows (in source order, in the compute type) and adds the sum once.
template <typename T>
__global__ void index_add_sorted_kernel(T* out, const T* src, const int64_t* keys, const int64_t* perm, int64_t outer,
                                        int64_t nidx, int64_t out_dim, int64_t inner, IndexErrorRecord* rec, int dim) {
  using C = dev::acc_t<T>;
  const int64_t rows = outer * nidx;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t o = r / nidx, j = r - o * nidx;
    const int64_t v = keys[j];
    if (j > 0 && keys[j - 1] == v) continue;  // not the start of a run
    if (bad_index(v, out_dim)) {
      if (threadIdx.x == 0) kit::record_index_error(rec, kit::kIndexAdd, v, out_dim, dim);
      continue;
    }
    int64_t end = j + 1;
    while (end < nidx && keys[end] == v) ++end;
    T* dst = out + (o * out_dim + v) * inner;
    for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
      C acc = dev::cast<C>(dst[k]);
      for (int64_t q = j; q < end; ++q) acc += dev::cast<C>(src[(o * nidx + perm[q]) * inner + k]);
      dst[k] = dev::cast<T>(acc);
    }
  }
}

// --- gather / scatter_add ---

// Element e of index (walked by `offs`: out, index, in with the dim's stride 0).
template <typename U>
__global__ void gather_kernel(U* out, const int64_t* index, const U* in, dev::OffsetCalculator<3> offs, int64_t n,
                              int64_t in_dim, int64_t in_step, IndexErrorRecord* rec, int dim) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offs.offsets(e, off);
    const int64_t v = index[off[1]];
    if (bad_index(v, in_dim)) {
      kit::record_index_error(rec, kit::kGather, v, in_dim, dim);
      continue;
    }
    out[off[0]] = in[off[2] + v * in_step];
  }
}

// Element e of index (walked by `offs`: out with the dim's stride 0, index, src).
template <typename T>
__global__ void scatter_add_kernel(T* out, const int64_t* index, const T* src, dev::OffsetCalculator<3> offs, int64_t n,
                                   int64_t out_dim, int64_t out_step, IndexErrorRecord* rec, int dim) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offs.offsets(e, off);
    const int64_t v = index[off[1]];
    if (bad_index(v, out_dim)) {
      kit::record_index_error(rec, kit::kScatterAdd, v, out_dim, dim);
      continue;
    }
    atomic_add(out + off[0] + v * out_step, src[off[2]]);
  }
}

// Deterministic: one thread per position off the scattered dim (walked by
// `offs` over the index's other dims), walking the dim serially. Two threads
// never share an output element, so no atomics are needed.
template <typename T>
__global__ void scatter_add_serial_kernel(T* out, const int64_t* index, const T* src, dev::OffsetCalculator<3> offs,
                                          int64_t n, int64_t len, int64_t out_step, int64_t index_step,
                                          int64_t src_step, int64_t out_dim, IndexErrorRecord* rec, int dim) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offs.offsets(e, off);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t v = index[off[1] + k * index_step];
      if (bad_index(v, out_dim)) {
        kit::record_index_error(rec, kit::kScatterAdd, v, out_dim, dim);
        continue;
      }
      owned_add(out + off[0] + v * out_step, src[off[2] + k * src_step]);
    }
  }
}

template <typename F> void visit_accumulating(const char* op, DType dtype, F&& f) {
  visit_device_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      fail(op, ": not supported for dtype bool");
    else
      f(tag);
  });
}

template <typename F> void visit_bits(DType dtype, F&& f) {
  switch (itemsize(dtype)) {
    case 1:
      f(uint8_t{});
      return;
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    default:
      f(uint64_t{});
      return;
  }
}

}  // namespace

void index_select(const View& out_, const View& in_, int64_t dim, const View& index) {
  ANVIL_NVTX_RANGE("index_select");
  const View out = at_least_1d(out_), in = at_least_1d(in_);
  dim = shapes::check_index_select(out, in, dim, index);
  DeviceGuard guard(in.device_index);
  raise_pending_index_error(in.device_index);
  if (out.numel() == 0) return;
  const cudaStream_t s = stream(in.device_index);
  IndexErrorRecord* rec = index_error_record(in.device_index);
  const View idx = at_least_1d(index);
  const int64_t nidx = idx.numel(), in_dim = in.shape[dim];
  const int64_t outer = prod(in.shape, 0, dim), inner = prod(in.shape, dim + 1, in.dim());
  const int64_t item = static_cast<int64_t>(itemsize(in.dtype));
  if (out.is_contiguous() && in.is_contiguous()) {
    const int64_t row_bytes = inner * item;
    const auto aligned = [&](int64_t b) {
      return row_bytes % b == 0 && reinterpret_cast<uintptr_t>(out.data) % b == 0 &&
             reinterpret_cast<uintptr_t>(in.data) % b == 0;
    };
    const int d = static_cast<int>(dim);
    if (aligned(16))
      launch_select_rows<16>(s, out, in, idx, outer, nidx, in_dim, row_bytes, rec, d);
    else if (aligned(8))
      launch_select_rows<8>(s, out, in, idx, outer, nidx, in_dim, row_bytes, rec, d);
    else if (aligned(4))
      launch_select_rows<4>(s, out, in, idx, outer, nidx, in_dim, row_bytes, rec, d);
    else if (aligned(2))
      launch_select_rows<2>(s, out, in, idx, outer, nidx, in_dim, row_bytes, rec, d);
    else
      launch_select_rows<1>(s, out, in, idx, outer, nidx, in_dim, row_bytes, rec, d);
    return;
  }
  Shape in_walk = in.strides;
  in_walk[dim] = 0;
  const auto offs = make_offset_calculator<2>("index_select", out.shape, {&out.strides, &in_walk});
  const int64_t n = out.numel(), out_inner = prod(out.shape, dim + 1, out.dim());
  visit_bits(in.dtype, [&](auto tag) {
    using U = decltype(tag);
    launch_kernel(select_strided_kernel<U>, capped_blocks(n, kThreads), kThreads, 0, s)(
        static_cast<U*>(out.data), static_cast<const U*>(in.data), static_cast<const int64_t*>(idx.data),
        idx.strides[0], offs, n, out_inner, nidx, in_dim, in.strides[dim], rec, static_cast<int>(dim));
    ANVIL_CUDA_CHECK_LAUNCH("select_strided_kernel");
  });
}

void index_add(const View& out_, int64_t dim, const View& index, const View& src_) {
  ANVIL_NVTX_RANGE("index_add");
  const View out = at_least_1d(out_), src = at_least_1d(src_);
  dim = shapes::check_index_add(out, dim, index, src);
  ANVIL_CHECK(out.dtype != kBool, "index_add: not supported for dtype bool");
  DeviceGuard guard(out.device_index);
  raise_pending_index_error(out.device_index);
  if (src.numel() == 0) return;
  const cudaStream_t s = stream(out.device_index);
  IndexErrorRecord* rec = index_error_record(out.device_index);
  const View idx = at_least_1d(index);
  const int64_t nidx = idx.numel(), out_dim = out.shape[dim];
  const int64_t outer = prod(out.shape, 0, dim), inner = prod(out.shape, dim + 1, out.dim());
  const int d = static_cast<int>(dim);

  if (deterministic_algorithms_enabled()) {
    DenseArg dout(cuda_runtime(), out, out.dtype, DenseArg::InOut), dsrc(cuda_runtime(), src, src.dtype, DenseArg::In);
    DenseArg keys_in(cuda_runtime(), idx, kInt64, DenseArg::In);
    Scratch keys(cuda_runtime(), out.device_index, nidx * 8), perm_in(cuda_runtime(), out.device_index, nidx * 8),
        perm(cuda_runtime(), out.device_index, nidx * 8);
    launch_kernel(iota_kernel, capped_blocks(nidx, kThreads), kThreads, 0, s)(perm_in.as<int64_t>(), nidx);
    ANVIL_CUDA_CHECK_LAUNCH("iota_kernel");
    ANVIL_CHECK(nidx < (int64_t(1) << 31), "index_add: at most 2^31 indices are supported, got ", nidx);
    const int n = static_cast<int>(nidx);
    size_t temp_bytes = 0;
    ANVIL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in.ptr<int64_t>(), keys.as<int64_t>(),
                                                     perm_in.as<int64_t>(), perm.as<int64_t>(), n, 0, 64, s));
    Scratch temp(cuda_runtime(), out.device_index, temp_bytes);
    ANVIL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys_in.ptr<int64_t>(), keys.as<int64_t>(),
                                                     perm_in.as<int64_t>(), perm.as<int64_t>(), n, 0, 64, s));
    visit_accumulating("index_add", out.dtype, [&](auto tag) {
      using T = decltype(tag);
      const int threads = inner >= 256 ? 256 : inner >= 64 ? 64 : 32;
      launch_kernel(index_add_sorted_kernel<T>, capped_blocks(outer * nidx, 1, kMaxRowBlocks), threads, 0, s)(
          dout.ptr<T>(), dsrc.ptr<T>(), keys.as<int64_t>(), perm.as<int64_t>(), outer, nidx, out_dim, inner, rec, d);
      ANVIL_CUDA_CHECK_LAUNCH("index_add_sorted_kernel");
    });
    dout.commit();
    return;
  }

  visit_accumulating("index_add", out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (out.is_contiguous() && src.is_contiguous()) {
      const int threads = inner >= 256 ? 256 : inner >= 64 ? 64 : 32;
      launch_kernel(index_add_rows_kernel<T>, capped_blocks(outer * nidx, 1, kMaxRowBlocks), threads, 0, s)(
          static_cast<T*>(out.data), static_cast<const T*>(src.data), static_cast<const int64_t*>(idx.data),
          idx.strides[0], outer, nidx, out_dim, inner, rec, d);
      ANVIL_CUDA_CHECK_LAUNCH("index_add_rows_kernel");
      return;
    }
    Shape out_walk = out.strides;
    out_walk[dim] = 0;
    const auto offs = make_offset_calculator<2>("index_add", src.shape, {&out_walk, &src.strides});
    const int64_t n = src.numel();
    launch_kernel(index_add_strided_kernel<T>, capped_blocks(n, kThreads), kThreads, 0, s)(
        static_cast<T*>(out.data), static_cast<const T*>(src.data), static_cast<const int64_t*>(idx.data),
        idx.strides[0], offs, n, inner, nidx, out_dim, out.strides[dim], rec, d);
    ANVIL_CUDA_CHECK_LAUNCH("index_add_strided_kernel");
  });
}

void gather(const View& out_, const View& in_, int64_t dim, const View& index_) {
  ANVIL_NVTX_RANGE("gather");
  const View out = at_least_1d(out_), in = at_least_1d(in_), index = at_least_1d(index_);
  dim = shapes::check_gather(out, in, dim, index);
  DeviceGuard guard(in.device_index);
  raise_pending_index_error(in.device_index);
  const int64_t n = index.numel();
  if (n == 0) return;
  const cudaStream_t s = stream(in.device_index);
  IndexErrorRecord* rec = index_error_record(in.device_index);
  Shape in_walk = in.strides;
  in_walk[dim] = 0;
  const auto offs = make_offset_calculator<3>("gather", index.shape, {&out.strides, &index.strides, &in_walk});
  visit_bits(in.dtype, [&](auto tag) {
    using U = decltype(tag);
    launch_kernel(gather_kernel<U>, capped_blocks(n, kThreads), kThreads, 0, s)(
        static_cast<U*>(out.data), static_cast<const int64_t*>(index.data), static_cast<const U*>(in.data), offs, n,
        in.shape[dim], in.strides[dim], rec, static_cast<int>(dim));
    ANVIL_CUDA_CHECK_LAUNCH("gather_kernel");
  });
}

void scatter_add(const View& out_, int64_t dim, const View& index_, const View& src_) {
  ANVIL_NVTX_RANGE("scatter_add");
  const View out = at_least_1d(out_), index = at_least_1d(index_), src = at_least_1d(src_);
  dim = shapes::check_scatter_add(out, dim, index, src);
  ANVIL_CHECK(out.dtype != kBool, "scatter_add: not supported for dtype bool");
  DeviceGuard guard(out.device_index);
  raise_pending_index_error(out.device_index);
  const int64_t n = index.numel();
  if (n == 0) return;
  const cudaStream_t s = stream(out.device_index);
  IndexErrorRecord* rec = index_error_record(out.device_index);
  const int d = static_cast<int>(dim);
  visit_accumulating("scatter_add", out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (deterministic_algorithms_enabled()) {
      const View index_rest = without_dim(index, dim);
      Shape out_rest = out.strides, src_rest = src.strides;
      out_rest.erase(out_rest.begin() + dim);
      src_rest.erase(src_rest.begin() + dim);
      const auto offs =
          make_offset_calculator<3>("scatter_add", index_rest.shape, {&out_rest, &index_rest.strides, &src_rest});
      const int64_t rest = index_rest.numel();
      launch_kernel(scatter_add_serial_kernel<T>, capped_blocks(rest, kThreads), kThreads, 0, s)(
          static_cast<T*>(out.data), static_cast<const int64_t*>(index.data), static_cast<const T*>(src.data), offs,
          rest, index.shape[dim], out.strides[dim], index.strides[dim], src.strides[dim], out.shape[dim], rec, d);
      ANVIL_CUDA_CHECK_LAUNCH("scatter_add_serial_kernel");
      return;
    }
    Shape out_walk = out.strides;
    out_walk[dim] = 0;
    const auto offs = make_offset_calculator<3>("scatter_add", index.shape, {&out_walk, &index.strides, &src.strides});
    launch_kernel(scatter_add_kernel<T>, capped_blocks(n, kThreads), kThreads, 0, s)(
        static_cast<T*>(out.data), static_cast<const int64_t*>(index.data), static_cast<const T*>(src.data), offs, n,
        out.shape[dim], out.strides[dim], rec, d);
    ANVIL_CUDA_CHECK_LAUNCH("scatter_add_kernel");
  });
}

ANVIL_REGISTER_KERNEL(kernel::IndexSelect, CUDA, index_select);
ANVIL_REGISTER_KERNEL(kernel::IndexAdd, CUDA, index_add);
ANVIL_REGISTER_KERNEL(kernel::Gather, CUDA, gather);

}  // namespace anvil::cuda
