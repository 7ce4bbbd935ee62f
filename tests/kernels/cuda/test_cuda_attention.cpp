// The flash-attention kernels (kernels/cuda/attention.cu) against the CPU
// backend: forward output and the three gradients through
// scaled_dot_product_attention, in float32, bfloat16 and float16 (and
// float64), with causal, bool key-padding and additive masks, lengths that
// leave partial tiles, several head dims, fully masked rows, and dropout. Shapes stay
// small on the emulated GPU, where every thread is a fiber.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "kernels/cuda/attention_choice.h"
#include "tests/kernels/cuda/attention_with_grads.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;

struct Dims {
  int64_t b, h, l, s, e, ev;
};

std::string text(const Dims& d, DType dt, const char* mask, bool causal) {
  return std::string(dtype_name(dt)) + " B=" + std::to_string(d.b) + " H=" + std::to_string(d.h) +
         " L=" + std::to_string(d.l) + " S=" + std::to_string(d.s) + " E=" + std::to_string(d.e) +
         " Ev=" + std::to_string(d.ev) + " mask=" + mask + (causal ? " causal" : "");
}

// Gradients pass through sums of many products: looser than one rounding.
test::Tolerance grad_tolerance(DType dt) {
  if (dt == kFloat16) return {1e-2, 1e-2};
  if (dt == kBFloat16) return {5e-2, 5e-2};
  if (dt == kFloat32) return {1e-4, 1e-5};
  return {1e-9, 1e-11};
}

test::Tolerance out_tolerance(DType dt) {
  if (dt == kFloat32) return {2e-5, 2e-6};
  return test::tolerance_for(dt);
}

using Result = test::AttentionResult;
using test::attention_with_grads;

// With dropout_p > 0 both runs start from one generator state, so both
// backends drop the same probabilities (each indexes Philox as the dropout op).
void expect_matches_cpu(const Dims& d, DType dt, const char* mask_name, const Tensor& mask, bool causal, uint64_t seed,
                        double dropout_p = 0) {
  SCOPED_TRACE(text(d, dt, mask_name, causal) + " dropout " + std::to_string(dropout_p));
  const Tensor q = random_tensor({d.b, d.h, d.l, d.e}, dt, seed), k = random_tensor({d.b, d.h, d.s, d.e}, dt, seed + 1),
               v = random_tensor({d.b, d.h, d.s, d.ev}, dt, seed + 2),
               g = random_tensor({d.b, d.h, d.l, d.ev}, dt, seed + 3);
  AttentionOptions o;
  o.is_causal = causal;
  o.attn_mask = mask;
  o.dropout_p = dropout_p;
  manual_seed(seed);
  const Result cpu = attention_with_grads(q, k, v, g, o);
  AttentionOptions og = o;
  if (mask.defined()) og.attn_mask = mask.cuda();
  manual_seed(seed);
  const Result gpu = attention_with_grads(q.cuda(), k.cuda(), v.cuda(), g.cuda(), og);
  EXPECT_CUDA_CLOSE(gpu.out, cpu.out, out_tolerance(dt));
  EXPECT_CUDA_CLOSE(gpu.gq, cpu.gq, grad_tolerance(dt));
  EXPECT_CUDA_CLOSE(gpu.gk, cpu.gk, grad_tolerance(dt));
  EXPECT_CUDA_CLOSE(gpu.gv, cpu.gv, grad_tolerance(dt));
}

Tensor key_padding(int64_t b, int64_t s) {
  std::vector<uint8_t> bits;
  for (int64_t r = 0; r < b; ++r)
    for (int64_t j = 0; j < s; ++j) bits.push_back(j < s - 3 * r - 1);
  return from_vector(bits, {b, 1, 1, s}).to(kBool);
}

TEST(CudaAttention, MatchesCpuInEveryMaskKind) {
  ANVIL_SKIP_WITHOUT_GPU();
  // Partial tiles on both sides (16-query / 32-key tiles), S != L.
  const Dims d = test::emulated_gpu() ? Dims{2, 2, 17, 37, 16, 8} : Dims{2, 4, 130, 200, 64, 64};
  const Tensor padding = key_padding(d.b, d.s);
  const Tensor additive = random_tensor({d.l, d.s}, kFloat32, 99);
  uint64_t seed = 10;
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    expect_matches_cpu(d, dt, "none", {}, false, seed++);
    expect_matches_cpu(d, dt, "none", {}, true, seed++);
    expect_matches_cpu(d, dt, "key padding", padding, false, seed++);
    expect_matches_cpu(d, dt, "additive", additive.to(dt), true, seed++);
  }
  expect_matches_cpu(d, kFloat64, "key padding", padding, true, seed++);
}

TEST(CudaAttention, HeadDimsAndOddLengths) {
  ANVIL_SKIP_WITHOUT_GPU();
  std::vector<Dims> dims = {{1, 1, 1, 1, 8, 8}, {1, 1, 1, 33, 80, 80}, {1, 1, 33, 5, 8, 24}};
  if (test::emulated_gpu()) {
    dims.push_back({1, 1, 5, 9, 256, 256});
  } else {
    dims.push_back({2, 3, 257, 130, 256, 256});
    dims.push_back({1, 2, 1024, 1024, 64, 64});
  }
  uint64_t seed = 100;
  for (const Dims& d : dims) {
    expect_matches_cpu(d, kFloat32, "none", {}, d.l > 1, seed++);
    expect_matches_cpu(d, kBFloat16, "none", {}, false, seed++);
  }
}

TEST(CudaAttention, DropoutDropsWhatTheCpuDrops) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Dims d = test::emulated_gpu() ? Dims{1, 2, 17, 37, 16, 8} : Dims{2, 4, 130, 200, 64, 64};
  const Tensor padding = key_padding(d.b, d.s);
  uint64_t seed = 200;
  for (DType dt : {kFloat32, kBFloat16})
    for (bool causal : {false, true}) expect_matches_cpu(d, dt, "key padding", padding, causal, seed++, 0.25);
  expect_matches_cpu({1, 1, 5, 7, 4, 3}, kFloat64, "none", {}, false, seed++, 0.5);
}

// A row with no allowed key: 0 output and no gradient, as the CPU.
TEST(CudaAttention, FullyMaskedRows) {
  ANVIL_SKIP_WITHOUT_GPU();
  const int64_t L = 6, S = 9;
  std::vector<uint8_t> bits(static_cast<size_t>(L * S), 1);
  for (int64_t j = 0; j < S; ++j) bits[2 * S + j] = 0;
  bits[4 * S + 3] = 0;
  const Tensor mask = from_vector(bits, {L, S}).to(kBool);
  for (DType dt : {kFloat32, kFloat16}) {
    expect_matches_cpu({1, 2, L, S, 8, 4}, dt, "row 2 empty", mask, false, 7);
    const Tensor out = scaled_dot_product_attention(
        random_tensor({1, 2, L, 8}, dt, 1).cuda(), random_tensor({1, 2, S, 8}, dt, 2).cuda(),
        random_tensor({1, 2, S, 4}, dt, 3).cuda(), AttentionOptions{.attn_mask = mask.cuda()});
    EXPECT_EQ(out.select(2, 2).abs().sum().cpu().item<double>(), 0.0);
    EXPECT_TRUE(out.isfinite().all().cpu().item<bool>());
  }
}

// bfloat16 and float16 run on tensor cores (attention_tensor_core*.cu) for
// head dims up to 128 in multiples of 8; ANVIL_ATTENTION_TENSOR_CORES=0
// selects the other kernels. Both against the CPU, over 64-row and 64-key
// tile edges, the two padded head dims (64, 128), causal and bool masks, a
// fully masked row and dropout, forward and backward; and the two kernels'
// results must differ in some bits (P and dS are rounded to 16 bits on the
// tensor cores), which shows the tensor-core kernels are the ones that ran.
TEST(CudaAttention, TensorCoresMatchCpuAndTheOtherKernels) {
  ANVIL_SKIP_WITHOUT_GPU();
  // The flash kernels alone: on a real GPU the auto choice would run cuDNN for
  // both settings of ANVIL_ATTENTION_TENSOR_CORES where cuDNN takes the problem.
  cuda::ScopedSdpaBackend flash_kernels("flash");
  struct Case {
    Dims d;
    bool causal;
    bool masked;
    double dropout_p;
  };
  const std::vector<Case> cases = {
      {{1, 2, 70, 130, 64, 64}, false, false, 0.0},  // partial query and key tiles, kDim 64
      {{2, 1, 65, 65, 72, 40}, true, false, 0.0},  // kDim 128, E != Ev, causal
      {{1, 1, 33, 97, 128, 128}, false, true, 0.0},  // bool mask with an empty row
      {{1, 2, 40, 70, 16, 8}, false, true, 0.3},  // dropout beside the mask
  };
  uint64_t seed = 300;
  for (DType dt : {kBFloat16, kFloat16}) {
    for (const Case& c : cases) {
      const Dims& d = c.d;
      Tensor mask;
      if (c.masked) {
        std::vector<uint8_t> bits(static_cast<size_t>(d.l * d.s));
        uint64_t state = seed;
        for (auto& b : bits) b = ((state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33) % 4 != 0;
        for (int64_t j = 0; j < d.s; ++j) bits[static_cast<size_t>(5 * d.s + j)] = 0;  // row 5: no key allowed
        mask = from_vector(bits, {d.l, d.s}).to(kBool);
      }
      expect_matches_cpu(d, dt, c.masked ? "random bool" : "none", mask, c.causal, seed, c.dropout_p);
      SCOPED_TRACE(text(d, dt, c.masked ? "random bool" : "none", c.causal));
      const Tensor q = random_tensor({d.b, d.h, d.l, d.e}, dt, seed).cuda(),
                   k = random_tensor({d.b, d.h, d.s, d.e}, dt, seed + 1).cuda(),
                   v = random_tensor({d.b, d.h, d.s, d.ev}, dt, seed + 2).cuda(),
                   g = random_tensor({d.b, d.h, d.l, d.ev}, dt, seed + 3).cuda();
      AttentionOptions o{.attn_mask = mask.defined() ? mask.cuda() : Tensor(), .is_causal = c.causal};
      const Result tensor_cores = attention_with_grads(q, k, v, g, o);
      setenv("ANVIL_ATTENTION_TENSOR_CORES", "0", 1);
      const Result other = attention_with_grads(q, k, v, g, o);
      unsetenv("ANVIL_ATTENTION_TENSOR_CORES");
      const Tensor pairs[4][2] = {{tensor_cores.out, other.out},
                                  {tensor_cores.gq, other.gq},
                                  {tensor_cores.gk, other.gk},
                                  {tensor_cores.gv, other.gv}};
      for (int which = 0; which < 4; ++which) {
        SCOPED_TRACE(which == 0 ? "output" : which == 1 ? "grad q" : which == 2 ? "grad k" : "grad v");
        const Tensor a = pairs[which][0].cpu(), b = pairs[which][1].cpu();
        EXPECT_TRUE(all_close(a, b, which == 0 ? out_tolerance(dt) : grad_tolerance(dt)));
        EXPECT_GT((a != b).sum().item<double>(), 0.0) << "the tensor-core kernel did not run";
      }
      const Tensor tensor_cores_out = tensor_cores.out.cpu();
      if (c.masked) {
        EXPECT_EQ(tensor_cores_out.select(2, 5).abs().sum().item<double>(), 0.0);
      }
      seed += 10;
    }
  }
}

TEST(CudaAttention, StridedOperandsAndBadInput) {
  ANVIL_SKIP_WITHOUT_GPU();
  // q, k, v as heads split from [B, T, H, E] (transposed views), as the nn layers pass them.
  const Tensor x = random_tensor({2, 9, 3, 8}, kFloat32, 5);
  const Tensor qt = x.transpose(1, 2);
  const Tensor cpu = scaled_dot_product_attention(qt, qt, qt, AttentionOptions{.is_causal = true});
  const Tensor xg = x.cuda().transpose(1, 2);
  EXPECT_CUDA_CLOSE(scaled_dot_product_attention(xg, xg, xg, AttentionOptions{.is_causal = true}), cpu);
  try {
    scaled_dot_product_attention(random_tensor({1, 1, 2, 300}, kFloat32, 1).cuda(),
                                 random_tensor({1, 1, 2, 300}, kFloat32, 2).cuda(),
                                 random_tensor({1, 1, 2, 8}, kFloat32, 3).cuda());
    ADD_FAILURE() << "head dim 300 should be refused on CUDA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anvil
