// cuDNN's fused attention (kernels/cudnn/sdpa.cpp) and the choice between it
// and the flash kernels (kernels/cuda/attention_choice.h). With
// ANVIL_SDPA_BACKEND=cudnn forced on, the output and the three gradients of
// scaled_dot_product_attention against the flash kernels
// (ANVIL_SDPA_BACKEND=flash) and the composed matmul/softmax path in float32
// on the CPU, in bfloat16 and float16, causal and not, odd lengths, several
// head dims. The emulated GPU has no cuDNN: those tests skip there, and the
// fallback test checks that every call runs the flash kernels with the reason.
// Without any GPU, cuDNN's library still checks every op of the graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "kernels/cuda/attention_choice.h"
#include "kernels/cudnn/sdpa.h"
#include "tests/kernels/cuda/attention_with_grads.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using cuda::last_sdpa_decision;
using cuda::ScopedSdpaBackend;
using cuda::SdpaPath;
using test::random_tensor;

#define ANVIL_SKIP_WITHOUT_CUDNN() \
  do { \
    ANVIL_SKIP_WITHOUT_GPU(); \
    if (test::emulated_gpu()) GTEST_SKIP() << "cuDNN is not emulated: the emulated GPU has no cuDNN"; \
  } while (0)

struct Dims {
  int64_t b, h, l, s, e, ev;
};

std::string text(const Dims& d, DType dt, bool causal) {
  return std::string(dtype_name(dt)) + " B=" + std::to_string(d.b) + " H=" + std::to_string(d.h) +
         " L=" + std::to_string(d.l) + " S=" + std::to_string(d.s) + " E=" + std::to_string(d.e) +
         " Ev=" + std::to_string(d.ev) + (causal ? " causal" : "");
}

using Result = test::AttentionResult;
using test::attention_with_grads;

// matmul, mask, softmax, matmul in float32 on the CPU, with autograd's gradients.
Result composed(const Tensor& q16, const Tensor& k16, const Tensor& v16, const Tensor& g16, bool causal) {
  std::vector<Tensor> in = {q16.cpu().to(kFloat32).requires_grad_(true), k16.cpu().to(kFloat32).requires_grad_(true),
                            v16.cpu().to(kFloat32).requires_grad_(true)};
  const double scale = 1.0 / std::sqrt(static_cast<double>(q16.size(-1)));
  Tensor scores = matmul(in[0], in[1].transpose(-2, -1)) * scale;
  if (causal) {
    Tensor future = gt(arange(static_cast<double>(k16.size(-2)), TensorOptions().dtype(kInt64)).unsqueeze(0),
                       arange(static_cast<double>(q16.size(-2)), TensorOptions().dtype(kInt64)).unsqueeze(1));
    scores = masked_fill(scores, future, -INFINITY);
  }
  Tensor out = matmul(softmax(scores, -1), in[2]);
  auto grads = autograd::grad({(out * g16.cpu().to(kFloat32)).sum()}, in);
  return {out.detach(), grads[0], grads[1], grads[2]};
}

// One rounding of P or dS to 16 bits inside either kernel, against float32 math.
test::Tolerance out_tolerance(DType dt) {
  return dt == kBFloat16 ? test::Tolerance{2e-2, 2e-2} : test::Tolerance{5e-3, 5e-3};
}
test::Tolerance grad_tolerance(DType dt) {
  return dt == kBFloat16 ? test::Tolerance{5e-2, 5e-2} : test::Tolerance{1e-2, 1e-2};
}

void expect_close(const Result& got, const Result& want, DType dt, const char* what) {
  SCOPED_TRACE(what);
  const Tensor g[4] = {got.out, got.gq, got.gk, got.gv}, w[4] = {want.out, want.gq, want.gk, want.gv};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i == 0 ? "output" : i == 1 ? "grad q" : i == 2 ? "grad k" : "grad v");
    EXPECT_TRUE(test::all_close(g[i].cpu().to(kFloat32), w[i].cpu().to(kFloat32),
                                i == 0 ? out_tolerance(dt) : grad_tolerance(dt)));
  }
}

// A backward the runtime cuDNN cannot take with this path (sdpa.cpp's version gate) is no failure.
bool version_declined(const std::string& why) { return why.find("(< 9.16)") != std::string::npos; }

// cuDNN's own checks of every op of the graphs (shapes, types, broadcasts),
// run by the real library with no GPU: what can be verified before a GPU
// builds a plan from them.
TEST(CudnnSdpa, GraphOpsPassCudnnChecksWithoutAGpu) {
  if (test::emulated_gpu()) GTEST_SKIP() << "cuDNN is not emulated: the emulated GPU has no cuDNN";
  for (DType dt : {kBFloat16, kFloat16}) {
    for (const Dims& d : {Dims{2, 3, 77, 131, 64, 64}, Dims{1, 1, 1, 1, 8, 8}, Dims{2, 4, 65, 33, 128, 128},
                          Dims{1, 2, 40, 70, 64, 32}}) {
      for (bool causal : {false, true}) {
        const cuda::CudnnSdpaProblem p{.dtype = dt,
                                       .batch = d.b,
                                       .heads = d.h,
                                       .len_q = d.l,
                                       .len_k = d.s,
                                       .dim_qk = d.e,
                                       .dim_v = d.ev,
                                       .causal = causal,
                                       .scale = 0.125f};
        for (bool backward : {false, true}) {
          EXPECT_EQ(cuda::cudnn_sdpa_check_ops(p, backward), "")
              << text(d, dt, causal) << (backward ? " backward" : " forward");
        }
      }
    }
  }
}

TEST(CudnnSdpa, MatchesFlashAndComposed) {
  ANVIL_SKIP_WITHOUT_CUDNN();
  const std::vector<Dims> shapes = {
      {2, 3, 128, 128, 64, 64},  // tile-aligned
      {1, 2, 77, 131, 64, 64},  // odd lengths, S > L
      {2, 2, 100, 257, 128, 128},  // the largest head dim, odd S
      {1, 4, 65, 33, 32, 32},  // L > S: causal rows past S see every key
      {1, 1, 19, 45, 8, 8},  // the smallest head dim
      {2, 1, 50, 70, 80, 80},  // a head dim that is no power of two
  };
  uint64_t seed = 900;
  for (DType dt : {kBFloat16, kFloat16}) {
    for (const Dims& d : shapes) {
      for (bool causal : {false, true}) {
        SCOPED_TRACE(text(d, dt, causal));
        const Tensor q = random_tensor({d.b, d.h, d.l, d.e}, dt, seed).cuda(),
                     k = random_tensor({d.b, d.h, d.s, d.e}, dt, seed + 1).cuda(),
                     v = random_tensor({d.b, d.h, d.s, d.ev}, dt, seed + 2).cuda(),
                     g = random_tensor({d.b, d.h, d.l, d.ev}, dt, seed + 3).cuda();
        seed += 10;
        const AttentionOptions o{.is_causal = causal};
        Result with_cudnn;
        {
          ScopedSdpaBackend forced("cudnn");
          with_cudnn = attention_with_grads(q, k, v, g, o);
          const cuda::SdpaDecision fwd = last_sdpa_decision(false), bwd = last_sdpa_decision(true);
          EXPECT_EQ(fwd.path, SdpaPath::Cudnn) << "forward: " << fwd.why;
          if (!version_declined(bwd.why)) {
            EXPECT_EQ(bwd.path, SdpaPath::Cudnn) << "backward: " << bwd.why;
          }
        }
        Result with_flash;
        {
          ScopedSdpaBackend forced("flash");
          with_flash = attention_with_grads(q, k, v, g, o);
          EXPECT_EQ(last_sdpa_decision(false).path, SdpaPath::Flash);
        }
        expect_close(with_cudnn, with_flash, dt, "cudnn vs flash");
        expect_close(with_cudnn, composed(q, k, v, g, causal), dt, "cudnn vs composed float32");
      }
    }
  }
}

// The choice is made once per problem: a first call times both paths, later
// ones reuse it; whichever wins, the result is right.
TEST(CudnnSdpa, AutoTimesOnceAndKeepsTheFaster) {
  ANVIL_SKIP_WITHOUT_CUDNN();
  ScopedSdpaBackend chosen("auto");
  const Dims d{2, 4, 256, 256, 64, 64};
  const Tensor q = random_tensor({d.b, d.h, d.l, d.e}, kBFloat16, 1).cuda(),
               k = random_tensor({d.b, d.h, d.s, d.e}, kBFloat16, 2).cuda(),
               v = random_tensor({d.b, d.h, d.s, d.ev}, kBFloat16, 3).cuda(),
               g = random_tensor({d.b, d.h, d.l, d.ev}, kBFloat16, 4).cuda();
  const AttentionOptions o{.is_causal = true};
  const Result first = attention_with_grads(q, k, v, g, o);
  const cuda::SdpaDecision fwd = last_sdpa_decision(false), bwd = last_sdpa_decision(true);
  EXPECT_NE(fwd.why.find("vs flash"), std::string::npos) << fwd.why;
  if (!version_declined(bwd.why)) {
    EXPECT_NE(bwd.why.find("vs flash"), std::string::npos) << bwd.why;
  }
  std::printf("auto forward: %s\nauto backward: %s\n", fwd.why.c_str(), bwd.why.c_str());
  const Result again = attention_with_grads(q, k, v, g, o);
  EXPECT_NE(last_sdpa_decision(false).why.find("cached"), std::string::npos) << last_sdpa_decision(false).why;
  EXPECT_EQ(last_sdpa_decision(false).path, fwd.path);
  EXPECT_EQ(last_sdpa_decision(true).path, bwd.path);
  expect_close(first, composed(q, k, v, g, true), kBFloat16, "auto vs composed float32");
  expect_close(again, first, kBFloat16, "second call vs first");
}

// Out of scope, or no cuDNN at all (the emulated GPU): the flash kernels run,
// the decision says why, and the result is the CPU's. Runs on both GPUs.
TEST(CudnnSdpa, FallsBackToFlashWithTheReason) {
  ANVIL_SKIP_WITHOUT_GPU();
  ScopedSdpaBackend forced("cudnn");
  struct Case {
    DType dtype;
    int64_t e;
    bool mask;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {kFloat32, 16, false, "float32"},
      {kBFloat16, 136, false, "head dim 136"},
      {kFloat16, 12, false, "head dim 12"},
      {kBFloat16, 16, true, "attn_mask"},
      {kFloat16, 16, false, test::emulated_gpu() ? "cuDNN is not emulated" : nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " E=" + std::to_string(c.e) + (c.mask ? " masked" : ""));
    const Tensor q = random_tensor({1, 2, 9, c.e}, c.dtype, 7), k = random_tensor({1, 2, 13, c.e}, c.dtype, 8),
                 v = random_tensor({1, 2, 13, c.e}, c.dtype, 9), g = random_tensor({1, 2, 9, c.e}, c.dtype, 10);
    AttentionOptions o;
    if (c.mask) o.attn_mask = gt(random_tensor({9, 13}, kFloat32, 11), -1.0);
    const Result cpu = attention_with_grads(q, k, v, g, o);
    if (c.mask) o.attn_mask = o.attn_mask.cuda();
    const Result gpu = attention_with_grads(q.cuda(), k.cuda(), v.cuda(), g.cuda(), o);
    for (bool backward : {false, true}) {
      const cuda::SdpaDecision d = last_sdpa_decision(backward);
      if (c.reason == nullptr) {  // in scope on a real GPU
        if (!version_declined(d.why)) {
          EXPECT_EQ(d.path, SdpaPath::Cudnn) << d.why;
        }
        continue;
      }
      EXPECT_EQ(d.path, SdpaPath::Flash) << d.why;
      EXPECT_NE(d.why.find(c.reason), std::string::npos) << d.why;
    }
    const test::Tolerance out_tol = c.dtype == kFloat32 ? test::Tolerance{2e-5, 2e-6} : out_tolerance(c.dtype);
    EXPECT_CUDA_CLOSE(gpu.out, cpu.out, out_tol);
    EXPECT_CUDA_CLOSE(gpu.gq, cpu.gq, c.dtype == kFloat32 ? test::Tolerance{1e-4, 1e-5} : grad_tolerance(c.dtype));
  }
  setenv("ANVIL_SDPA_BACKEND", "cuDNN please", 1);
  EXPECT_THROW(cuda::sdpa_setting(), Error);
}

}  // namespace
}  // namespace anvil
