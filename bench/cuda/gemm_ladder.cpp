// GEMM: every rung of the ladder (kernels/cuda/gemm/), cuBLAS, and anvil's
// matmul (anvil::matmul on CUDA tensors, with and without the ladder), square
// problems of 1024, 2048 and 4096, float32 and bfloat16. Each reports TFLOP/s
// (2*M*N*K per op) and, except cuBLAS itself, pct_cublas: the percentage of
// cuBLAS's rate on the same problem in this run.
//
// Names: gemm/<rung or cublas or matmul or matmul_ladder>/<f32|bf16>/<n>.
// bench/pytorch/kernels.py prints gemm/matmul/<dtype>/<n> (torch.matmul).
// float32 everywhere is true FP32 (no TF32), as in PyTorch's default.
#include <anvil/anvil.h>
#include <cublas_v2.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/cuda/bench_cuda_util.h"
#include "core/base/half.h"
#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda_info.h"
#include "kernels/matmul_settings.h"

namespace anvil::bench::cuda {
namespace {

using anvil::cuda::gemm::GemmArgs;
using anvil::cuda::gemm::GemmDType;
using anvil::cuda::gemm::GemmRung;

constexpr int64_t kSizes[] = {1024, 2048, 4096};

#define CUBLAS_CHECK(call) \
  do { \
    cublasStatus_t st_ = (call); \
    ANVIL_CHECK(st_ == CUBLAS_STATUS_SUCCESS, #call " failed with status ", static_cast<int>(st_)); \
  } while (0)

// A, B, C of one n x n x n problem in device memory, filled with uniform
// [-1, 1) values rounded to the dtype.
struct Problem {
  GemmDType dtype;
  int64_t n;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  Problem(GemmDType t, int64_t size) : dtype(t), n(size) {
    const size_t elems = static_cast<size_t>(n * n), es = t == GemmDType::Float32 ? 4 : 2;
    std::vector<uint8_t> host(elems * es);
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (void** p : {&a, &b, &c}) {
      for (size_t i = 0; i < elems; ++i) {
        const float v = dist(gen);
        if (es == 4) {
          std::memcpy(&host[i * 4], &v, 4);
        } else {
          const uint16_t bits = BFloat16(v).bits;
          std::memcpy(&host[i * 2], &bits, 2);
        }
      }
      ANVIL_CUDA_CHECK(cudaMalloc(p, host.size()));
      ANVIL_CUDA_CHECK(cudaMemcpy(*p, host.data(), host.size(), cudaMemcpyHostToDevice));
    }
  }
  ~Problem() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  GemmArgs args() const {
    GemmArgs g;
    g.dtype = dtype;
    g.M = g.N = g.K = n;
    g.A = a, g.B = b, g.C = c;
    g.lda = g.ldb = g.ldc = n;
    return g;
  }
  double flops() const { return 2.0 * static_cast<double>(n) * n * n; }
};

const char* short_name(GemmDType t) { return t == GemmDType::Float32 ? "f32" : "bf16"; }
cudaDataType_t cublas_type(GemmDType t) { return t == GemmDType::Float32 ? CUDA_R_32F : CUDA_R_16BF; }

cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // no TF32 for float32
    return h;
  }();
  CUBLAS_CHECK(cublasSetStream(handle, anvil_stream()));
  return handle;
}

void run_cublas(const Problem& p) {
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(p.n);
  // Row-major C = A B is column-major C^T = B^T A^T.
  CUBLAS_CHECK(cublasGemmEx(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, p.b, cublas_type(p.dtype), n,
                            p.a, cublas_type(p.dtype), n, &beta, p.c, cublas_type(p.dtype), n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

// cuBLAS's TFLOP/s for (dtype, n), measured once per run on first use.
double cublas_tflops(GemmDType t, int64_t n) {
  static std::map<std::pair<int, int64_t>, double> cache;
  const auto key = std::make_pair(static_cast<int>(t), n);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Problem p(t, n);
  cudaStream_t s = anvil_stream();
  run_cublas(p);
  cudaEvent_t start, stop;
  ANVIL_CUDA_CHECK(cudaEventCreate(&start));
  ANVIL_CUDA_CHECK(cudaEventCreate(&stop));
  constexpr int kReps = 10;
  ANVIL_CUDA_CHECK(cudaEventRecord(start, s));
  for (int r = 0; r < kReps; ++r) run_cublas(p);
  ANVIL_CUDA_CHECK(cudaEventRecord(stop, s));
  ANVIL_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  ANVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double tflops = p.flops() * kReps / (ms * 1e-3) / 1e12;
  cache[key] = tflops;
  return tflops;
}

// Slow rungs get fewer repetitions per timed iteration (01 at 4096 in
// float32 takes on the order of a second).
int reps_for(GemmRung rung, int64_t n) {
  if (static_cast<int>(rung) <= 3) return 1;
  return n >= 4096 ? 2 : 5;
}

void register_rung(GemmRung rung, GemmDType t, int64_t n) {
  const std::string name =
      std::string("gemm/") + anvil::cuda::gemm::rung_name(rung) + "/" + short_name(t) + "/" + std::to_string(n);
  register_gpu(name, [rung, t, n](benchmark::State& state) {
    Problem p(t, n);
    const GemmArgs args = p.args();
    const std::string why = anvil::cuda::gemm::gemm_unsupported_reason(rung, args);
    if (!why.empty()) {
      state.SkipWithError(why.c_str());  // e.g. 09 on a non-Hopper GPU
      return;
    }
    cudaStream_t s = anvil_stream();
    const GpuTiming timing = time_on_gpu(
        state, [&] { anvil::cuda::gemm::launch_gemm(rung, args, s); }, reps_for(rung, n));
    report_tflops(state, p.flops(), timing, cublas_tflops(t, n));
  })->MinTime(static_cast<int>(rung) <= 3 ? 0.05 : 0.2);
}

void register_cublas(GemmDType t, int64_t n) {
  register_gpu(std::string("gemm/cublas/") + short_name(t) + "/" + std::to_string(n), [t, n](benchmark::State& state) {
    Problem p(t, n);
    const GpuTiming timing = time_on_gpu(
        state, [&] { run_cublas(p); }, 5);
    report_tflops(state, p.flops(), timing);
  });
}

// anvil::matmul on CUDA tensors: output allocation and dispatch included.
void register_anvil_matmul(GemmDType t, int64_t n, bool ladder) {
  const std::string name =
      std::string("gemm/") + (ladder ? "matmul_ladder/" : "matmul/") + short_name(t) + "/" + std::to_string(n);
  register_gpu(name, [t, n, ladder](benchmark::State& state) {
    const DType dtype = t == GemmDType::Float32 ? kFloat32 : kBFloat16;
    const Tensor a = rand({n, n}).to(Device::cuda(0), dtype), b = rand({n, n}).to(Device::cuda(0), dtype);
    const bool before = matmul_use_gemm_ladder();
    set_matmul_use_gemm_ladder(ladder);
    const GpuTiming timing = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(matmul(a, b)); }, 5);
    set_matmul_use_gemm_ladder(before);
    report_tflops(state, 2.0 * n * n * n, timing, cublas_tflops(t, n));
  });
}

}  // namespace

void register_gemm_benchmarks() {
  for (int64_t n : kSizes) {
    for (GemmDType t : {GemmDType::Float32, GemmDType::BFloat16}) {
      register_cublas(t, n);
      for (int r = 1; r <= anvil::cuda::gemm::kGemmRungCount; ++r) {
        const auto rung = static_cast<GemmRung>(r);
        if (anvil::cuda::gemm::rung_supports_dtype(rung, t)) register_rung(rung, t, n);
      }
      register_anvil_matmul(t, n, /*ladder=*/false);
      register_anvil_matmul(t, n, /*ladder=*/true);
    }
  }
}

}  // namespace anvil::bench::cuda
