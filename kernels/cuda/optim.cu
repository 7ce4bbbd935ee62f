// Fused multi-tensor optimizer updates (AdamW/Adam, SGD with momentum,
// Nesterov, dampening and weight decay), the formulas of kernels/cpu/optim.cpp
// (PyTorch's single-tensor path). One launch updates up to kMaxTensors tensors:
// the tensors' pointers and sizes and a block -> (tensor, chunk) table travel
// in the kernel's parameters (under 4 KB), each block updates one chunk of
// kChunk elements of one tensor with 16-byte loads and stores when every
// operand of that tensor is 16-byte aligned. A model with hundreds of
// parameter tensors costs a handful of launches per step instead of hundreds.
//
// Like the CPU backend: contiguous float32 or float64 tensors, each state of
// its parameter's dtype (mixed lists are split by dtype). Results agree with
// the CPU to rounding: nvcc fuses multiply-adds into FMAs, the host does not.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/optim_kernels.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/shapes/optim_checks.h"

namespace anvil::cuda {
namespace {

constexpr int kMaxTensors = 32;
constexpr int kMaxBlocks = 320;
constexpr int64_t kChunk = 65536;
constexpr int kThreads = 512;

template <int kDepth> struct TensorList {
  void* ptr[kDepth][kMaxTensors];
  int64_t numel[kMaxTensors];
  int32_t chunk[kMaxBlocks];
  uint8_t tensor[kMaxBlocks];
};
static_assert(sizeof(TensorList<4>) < 4000, "kernel parameters must stay under 4 KB");

template <typename T> struct Vec16;
template <> struct Vec16<float> {
  using type = float4;
  static constexpr int n = 4;
};
template <> struct Vec16<double> {
  using type = double2;
  static constexpr int n = 2;
};

template <typename T> struct AdamWOp {
  T b1, b2, one_minus_b1, one_minus_b2, step_size, inv_bias2_sqrt, eps, decay, wd;
  bool decoupled;
  // x = {param, grad, exp_avg, exp_avg_sq}
  __device__ __forceinline__ void operator()(T (&x)[4]) const {
    T p = x[0], g = x[1];
    if (decoupled)
      p *= decay;
    else
      g += wd * p;
    const T m = b1 * x[2] + one_minus_b1 * g;
    const T v = b2 * x[3] + one_minus_b2 * g * g;
    x[2] = m;
    x[3] = v;
    x[0] = p - step_size * m / (sqrt(v) * inv_bias2_sqrt + eps);
  }
};

template <typename T> struct SGDOp {
  T lr, wd, mom, keep;
  bool use_momentum, first, nesterov;
  // x = {param, grad, momentum buffer (unused without momentum)}
  __device__ __forceinline__ void operator()(T (&x)[3]) const {
    T d = x[1] + wd * x[0];
    if (use_momentum) {
      const T b = first ? d : mom * x[2] + keep * d;
      x[2] = b;
      d = nesterov ? d + mom * b : b;
    }
    x[0] -= lr * d;
  }
};

// Operand 1 (the gradient) is only read; the others are read and written.
// Operands past kUsed (SGD's absent momentum buffer) are not touched.
template <typename T, int kDepth, typename Op>
__global__ void __launch_bounds__(kThreads) multi_tensor_kernel(TensorList<kDepth> tl, Op op, int used) {
  const int t = tl.tensor[blockIdx.x];
  const int64_t start = static_cast<int64_t>(tl.chunk[blockIdx.x]) * kChunk;
  const int64_t len = min(kChunk, tl.numel[t] - start);
  T* ptr[kDepth];
  bool aligned = true;
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    ptr[d] = static_cast<T*>(tl.ptr[d][t]) + start;
    if (d < used) aligned = aligned && (reinterpret_cast<uintptr_t>(ptr[d]) % 16 == 0);
  }
  using V = typename Vec16<T>::type;
  constexpr int kVec = Vec16<T>::n;
  int64_t done = 0;
  if (aligned) {
    const int64_t nvec = len / kVec;
    for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) {
      T x[kVec][kDepth];
#pragma unroll
      for (int d = 0; d < kDepth; ++d) {
        if (d < used) {
          const V v = reinterpret_cast<const V*>(ptr[d])[i];
          const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
          for (int k = 0; k < kVec; ++k) x[k][d] = e[k];
        } else {
#pragma unroll
          for (int k = 0; k < kVec; ++k) x[k][d] = T(0);
        }
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k) op(x[k]);
#pragma unroll
      for (int d = 0; d < kDepth; ++d) {
        if (d == 1 || d >= used) continue;
        V v;
        T* e = reinterpret_cast<T*>(&v);
#pragma unroll
        for (int k = 0; k < kVec; ++k) e[k] = x[k][d];
        reinterpret_cast<V*>(ptr[d])[i] = v;
      }
    }
    done = nvec * kVec;
  }
  for (int64_t i = done + threadIdx.x; i < len; i += blockDim.x) {
    T x[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) x[d] = d < used ? ptr[d][i] : T(0);
    op(x);
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
      if (d != 1 && d < used) ptr[d][i] = x[d];
  }
}

// Queues `op` over tensors `which` of the lists (lists[d][k] is operand d of tensor k).
template <typename T, int kDepth, typename Op>
void launch_multi_tensor(cudaStream_t s, const std::vector<std::span<const View>>& lists,
                         const std::vector<size_t>& which, const Op& op, int used) {
  TensorList<kDepth> tl{};
  int nt = 0, nb = 0;
  auto flush = [&] {
    if (nb == 0) return;
    launch_kernel(multi_tensor_kernel<T, kDepth, Op>, nb, kThreads, 0, s)(tl, op, used);
    ANVIL_CUDA_CHECK_LAUNCH("multi_tensor_kernel");
    nb = 0;
  };
  for (size_t k : which) {
    const int64_t n = lists[0][k].numel();
    if (n == 0) continue;
    int slot = nt++;
    for (int d = 0; d < kDepth; ++d) tl.ptr[d][slot] = d < used ? lists[d][k].data : nullptr;
    tl.numel[slot] = n;
    const int64_t chunks = ceil_div(n, kChunk);
    for (int64_t c = 0; c < chunks; ++c) {
      tl.tensor[nb] = static_cast<uint8_t>(slot);
      tl.chunk[nb] = static_cast<int32_t>(c);
      if (++nb == kMaxBlocks) {
        flush();
        if (c + 1 < chunks) {  // the tensor goes on in the next launch, from slot 0
          for (int d = 0; d < kDepth; ++d) tl.ptr[d][0] = tl.ptr[d][slot];
          tl.numel[0] = n;
          slot = 0;
          nt = 1;
        } else {
          nt = 0;
        }
      }
    }
    if (nt == kMaxTensors) {
      flush();
      nt = 0;
    }
  }
  flush();
}

using shapes::check_optimizer_lists;

// The CPU's checks (kernels/shapes/optim_checks.h), plus: on param's device.
void check_tensor(const char* op, const View& param, const View& other, const char* what) {
  shapes::check_optimizer_tensor(op, param, other, what);
  ANVIL_CHECK(other.device_index == param.device_index, op, ": ", what, " is on cuda:", other.device_index,
              ", parameter on cuda:", param.device_index);
}

// Tensor indices grouped by (device, dtype), each group one series of launches.
struct Group {
  int device;
  DType dtype;
  std::vector<size_t> tensors;
};
std::vector<Group> group_tensors(std::span<const View> params) {
  std::vector<Group> groups;
  for (size_t k = 0; k < params.size(); ++k) {
    Group* g = nullptr;
    for (auto& e : groups)
      if (e.device == params[k].device_index && e.dtype == params[k].dtype) g = &e;
    if (!g) g = &groups.emplace_back(Group{params[k].device_index, params[k].dtype, {}});
    g->tensors.push_back(k);
  }
  return groups;
}

template <typename T> AdamWOp<T> make_adamw(const AdamWParams& hp) {
  const double bias1 = 1.0 - std::pow(hp.beta1, static_cast<double>(hp.step));
  const double bias2 = 1.0 - std::pow(hp.beta2, static_cast<double>(hp.step));
  return AdamWOp<T>{T(hp.beta1),        T(hp.beta2),
                    T(1.0 - hp.beta1),  T(1.0 - hp.beta2),
                    T(hp.lr / bias1),   T(1.0 / std::sqrt(bias2)),
                    T(hp.eps),          T(1.0 - hp.lr * hp.weight_decay),
                    T(hp.weight_decay), hp.decoupled};
}

template <typename T> SGDOp<T> make_sgd(const SGDParams& hp) {
  return SGDOp<T>{T(hp.lr),           T(hp.weight_decay), T(hp.momentum), T(1.0 - hp.dampening),
                  hp.momentum != 0.0, hp.first_step,      hp.nesterov};
}

}  // namespace

void adamw(std::span<const View> params, std::span<const View> grads, std::span<const View> exp_avg,
           std::span<const View> exp_avg_sq, const AdamWParams& p) {
  ANVIL_NVTX_RANGE("adamw");
  const char* name = p.decoupled ? "adamw" : "adam";
  check_optimizer_lists(name, params, {grads, exp_avg, exp_avg_sq});
  ANVIL_CHECK(p.step >= 1, name, ": step must be at least 1 (1-based, after increment), got ", p.step);
  for (size_t k = 0; k < params.size(); ++k) {
    check_tensor(name, params[k], grads[k], "gradient");
    check_tensor(name, params[k], exp_avg[k], "exp_avg");
    check_tensor(name, params[k], exp_avg_sq[k], "exp_avg_sq");
  }
  const std::vector<std::span<const View>> lists{params, grads, exp_avg, exp_avg_sq};
  for (const Group& g : group_tensors(params)) {
    DeviceGuard guard(g.device);
    const cudaStream_t s = stream(g.device);
    if (g.dtype == kFloat32)
      launch_multi_tensor<float, 4>(s, lists, g.tensors, make_adamw<float>(p), 4);
    else
      launch_multi_tensor<double, 4>(s, lists, g.tensors, make_adamw<double>(p), 4);
  }
}

void sgd(std::span<const View> params, std::span<const View> grads, std::span<const View> momentum,
         const SGDParams& p) {
  ANVIL_NVTX_RANGE("sgd");
  const bool use_momentum = p.momentum != 0.0;
  check_optimizer_lists("sgd", params, {grads});
  if (use_momentum) check_optimizer_lists("sgd", params, {momentum});
  for (size_t k = 0; k < params.size(); ++k) {
    check_tensor("sgd", params[k], grads[k], "gradient");
    if (use_momentum) check_tensor("sgd", params[k], momentum[k], "momentum buffer");
  }
  const std::vector<std::span<const View>> lists{params, grads, use_momentum ? momentum : grads};
  const int used = use_momentum ? 3 : 2;
  for (const Group& g : group_tensors(params)) {
    DeviceGuard guard(g.device);
    const cudaStream_t s = stream(g.device);
    if (g.dtype == kFloat32)
      launch_multi_tensor<float, 3>(s, lists, g.tensors, make_sgd<float>(p), used);
    else
      launch_multi_tensor<double, 3>(s, lists, g.tensors, make_sgd<double>(p), used);
  }
}

ANVIL_REGISTER_KERNEL(kernel::AdamW, CUDA, adamw);
ANVIL_REGISTER_KERNEL(kernel::SGD, CUDA, sgd);

}  // namespace anvil::cuda
