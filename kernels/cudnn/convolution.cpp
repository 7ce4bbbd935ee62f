// conv2d and its two backward passes through cuDNN's convolution API
// (cudnnConvolutionForward / BackwardData / BackwardFilter; cuDNN 9 keeps
// them in cudnn_cnn.h). Operands that are not dense NCHW in the output's
// dtype are made so with the backend's copy first; cuDNN always overwrites
// its output (beta = 0), as the CPU kernels do.
//
// Algorithms come from cuDNN's heuristics (cudnnGet*Algorithm_v7, which run
// nothing), asked once per (direction, shapes, dtype, params) and cached;
// workspaces come from the caching allocator; the bias is a broadcast add.
// float32 convolutions use FMA
// math only (no TF32) unless set_matmul_allow_tf32(true); float16/bfloat16
// use tensor cores with float32 accumulation; float64 is computed in double.
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "core/base/determinism.h"
#include "core/base/error.h"
#include "kernels/cuda/launch/algo_cache.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/conv2d_im2col.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cudnn/cudnn_handles.h"
#include "kernels/matmul_settings.h"
#include "kernels/shapes/geometry.h"

namespace anvil::cuda {
namespace {

// Workspaces above this are passed over while a smaller algorithm exists.
constexpr size_t kWorkspaceLimitBytes = size_t{1} << 30;

using shapes::conv_geometry;  // the same checks (and messages) as the CPU kernels
using shapes::ConvGeometry;

enum class Direction : int64_t { Forward, BackwardData, BackwardFilter };

// The descriptors of one convolution problem.
struct ConvDescriptors {
  TensorDesc x, y;
  FilterDesc w;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnMathType_t base_math = CUDNN_DEFAULT_MATH;
  bool fma_only = false;  // float32 without TF32

  ConvDescriptors(const char* op, const ConvGeometry& g, DType dtype) {
    const cudnnDataType_t type = cudnn_type(op, dtype);
    x.set_nchw(type, g.n, g.c, g.h, g.w);
    y.set_nchw(type, g.n, g.cout, g.ho, g.wo);
    w.set_kcrs(type, g.cout, g.c / g.groups, g.kh, g.kw);
    ANVIL_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    const cudnnDataType_t compute = dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    ANVIL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv, to_cudnn_int(op, g.ph), to_cudnn_int(op, g.pw), to_cudnn_int(op, g.sh), to_cudnn_int(op, g.sw),
        to_cudnn_int(op, g.dh), to_cudnn_int(op, g.dw), CUDNN_CROSS_CORRELATION, compute));
    ANVIL_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, to_cudnn_int(op, g.groups)));
    if (dtype == DType::Float32) {
      fma_only = !matmul_allow_tf32();
      base_math = fma_only ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    } else if (dtype == DType::Float16 || dtype == DType::BFloat16) {
      base_math = CUDNN_TENSOR_OP_MATH;
    }
    ANVIL_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, base_math));
  }
  ~ConvDescriptors() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};

struct AlgoChoice {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

AlgoCache<AlgoChoice>& conv_algo_cache() {
  static AlgoCache<AlgoChoice> cache;
  return cache;
}

std::vector<int64_t> cache_key(Direction dir, int device, DType dtype, bool fma_only, bool deterministic,
                               const ConvGeometry& g) {
  return {static_cast<int64_t>(dir),
          device,
          static_cast<int64_t>(dtype),
          fma_only,
          deterministic,
          g.n,
          g.c,
          g.h,
          g.w,
          g.cout,
          g.ho,
          g.wo,
          g.kh,
          g.kw,
          g.sh,
          g.sw,
          g.ph,
          g.pw,
          g.dh,
          g.dw,
          g.groups};
}

// The first (best-ranked) heuristic result that succeeded, respects the math
// restriction (and, under use_deterministic_algorithms(true), is
// deterministic: some backward algorithms accumulate with atomics) and fits
// the workspace limit; failing the limit, the first usable one.
template <typename Perf>
AlgoChoice pick(const char* op, const Perf* results, int count, bool fma_only, bool deterministic) {
  const Perf* fallback = nullptr;
  for (int i = 0; i < count; ++i) {
    const Perf& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
    if (fma_only && (r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    if (r.memory <= kWorkspaceLimitBytes) return AlgoChoice{static_cast<int>(r.algo), r.mathType};
    if (!fallback) fallback = &r;
  }
  ANVIL_CHECK(fallback != nullptr, op, ": cuDNN offers no ", deterministic ? "deterministic " : "",
              "algorithm for this convolution");
  return AlgoChoice{static_cast<int>(fallback->algo), fallback->mathType};
}

AlgoChoice choose(Direction dir, const char* op, cudnnHandle_t handle, const ConvDescriptors& d, int device,
                  DType dtype, const ConvGeometry& g) {
  const bool deterministic = deterministic_algorithms_enabled();
  const std::vector<int64_t> key = cache_key(dir, device, dtype, d.fma_only, deterministic, g);
  if (auto c = conv_algo_cache().find(key)) return *c;
  AlgoChoice choice;
  int returned = 0;
  switch (dir) {
    case Direction::Forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      ANVIL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y,
                                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
      choice = pick(op, perf, returned, d.fma_only, deterministic);
      break;
    }
    case Direction::BackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      ANVIL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
      choice = pick(op, perf, returned, d.fma_only, deterministic);
      break;
    }
    case Direction::BackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      ANVIL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
      choice = pick(op, perf, returned, d.fma_only, deterministic);
      break;
    }
  }
  // float32 without TF32 stays on FMA math whatever the heuristic reported.
  if (d.fma_only) choice.math = CUDNN_FMA_MATH;
  conv_algo_cache().insert(key, choice);
  return choice;
}

}  // namespace

void conv2d(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p) {
  ANVIL_NVTX_RANGE("conv2d");
  const char* op = "conv2d";
  const ConvGeometry g = conv_geometry(in.shape, weight.shape, out.shape, bias, p);
  const DType dtype = out.dtype;
  cudnn_type(op, dtype);
  const int device = out.device_index;
  DeviceGuard guard(device);
  if (out.numel() == 0) return;
  const DenseArg x(cuda_runtime(), in, dtype, DenseArg::In), w(cuda_runtime(), weight, dtype, DenseArg::In);
  DenseArg y(cuda_runtime(), out, DenseArg::Out);
  ConvDescriptors d(op, g, dtype);
  cudnnHandle_t handle = cudnn_handle(device, stream(device));
  const AlgoChoice choice = choose(Direction::Forward, op, handle, d, device, dtype, g);
  ANVIL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, choice.math));
  const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo);
  size_t ws_bytes = 0;
  ANVIL_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, algo, &ws_bytes));
  Scratch ws(cuda_runtime(), device, ws_bytes);
  const CudnnScalars& s = cudnn_scalars();
  ANVIL_CUDNN_CHECK(cudnnConvolutionForward(handle, s.one(dtype), d.x, x.data(), d.w, w.data(), d.conv, algo, ws.get(),
                                            ws_bytes, s.zero(dtype), d.y, y.data()));
  y.commit();
  if (bias) add_conv_bias(cuda_runtime(), out, *bias);
}

void conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight, const Conv2dParams& p) {
  ANVIL_NVTX_RANGE("conv2d_backward_input");
  const char* op = "conv2d_backward_input";
  const ConvGeometry g = conv_geometry(op, grad_in.shape, weight.shape, grad_out.shape, p);
  const DType dtype = grad_in.dtype;
  cudnn_type(op, dtype);
  const int device = grad_in.device_index;
  DeviceGuard guard(device);
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0 || weight.numel() == 0) {  // no output channels: nothing flows back
    fill(grad_in, Scalar(0.0));
    return;
  }
  const DenseArg dy(cuda_runtime(), grad_out, dtype, DenseArg::In), w(cuda_runtime(), weight, dtype, DenseArg::In);
  DenseArg dx(cuda_runtime(), grad_in, DenseArg::Out);
  ConvDescriptors d(op, g, dtype);
  cudnnHandle_t handle = cudnn_handle(device, stream(device));
  const AlgoChoice choice = choose(Direction::BackwardData, op, handle, d, device, dtype, g);
  ANVIL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, choice.math));
  const auto algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo);
  size_t ws_bytes = 0;
  ANVIL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d.w, d.y, d.conv, d.x, algo, &ws_bytes));
  Scratch ws(cuda_runtime(), device, ws_bytes);
  const CudnnScalars& s = cudnn_scalars();
  ANVIL_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, s.one(dtype), d.w, w.data(), d.y, dy.data(), d.conv, algo,
                                                 ws.get(), ws_bytes, s.zero(dtype), d.x, dx.data()));
  dx.commit();
}

void conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in, const Conv2dParams& p) {
  ANVIL_NVTX_RANGE("conv2d_backward_weight");
  const char* op = "conv2d_backward_weight";
  const ConvGeometry g = conv_geometry(op, in.shape, grad_weight.shape, grad_out.shape, p);
  const DType dtype = grad_weight.dtype;
  cudnn_type(op, dtype);
  const int device = grad_weight.device_index;
  DeviceGuard guard(device);
  if (grad_weight.numel() == 0) return;
  if (g.n == 0) {  // an empty batch contributes nothing
    fill(grad_weight, Scalar(0.0));
    return;
  }
  const DenseArg dy(cuda_runtime(), grad_out, dtype, DenseArg::In), x(cuda_runtime(), in, dtype, DenseArg::In);
  DenseArg dw(cuda_runtime(), grad_weight, DenseArg::Out);
  ConvDescriptors d(op, g, dtype);
  cudnnHandle_t handle = cudnn_handle(device, stream(device));
  const AlgoChoice choice = choose(Direction::BackwardFilter, op, handle, d, device, dtype, g);
  ANVIL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, choice.math));
  const auto algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo);
  size_t ws_bytes = 0;
  ANVIL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d.x, d.y, d.conv, d.w, algo, &ws_bytes));
  Scratch ws(cuda_runtime(), device, ws_bytes);
  const CudnnScalars& s = cudnn_scalars();
  ANVIL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, s.one(dtype), d.x, x.data(), d.y, dy.data(), d.conv, algo,
                                                   ws.get(), ws_bytes, s.zero(dtype), d.w, dw.data()));
  dw.commit();
}

ANVIL_REGISTER_KERNEL(kernel::Conv2d, CUDA, conv2d);
ANVIL_REGISTER_KERNEL(kernel::Conv2dBackwardInput, CUDA, conv2d_backward_input);
ANVIL_REGISTER_KERNEL(kernel::Conv2dBackwardWeight, CUDA, conv2d_backward_weight);

}  // namespace anvil::cuda
