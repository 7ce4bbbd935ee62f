// The kernel families of the report (kernel_families.h).
#include "bench/kernel_report/kernel_families.h"

#include <anvil/anvil.h>

#include "kernels/cuda/gemm/gemm.h"
#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"

namespace anvil::kernel_report {
namespace {

namespace gemm = anvil::cuda::gemm;

const Device kGpu = Device::cuda(0);
constexpr int64_t kRow = 1024;  // softmax / layer_norm / reduction rows: a hidden size
constexpr int64_t kVocab = 4096;  // cross_entropy classes

Tensor gpu_randn(const Shape& shape, DType dtype = kFloat32) { return randn(shape).to(kGpu, dtype); }

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t x : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

void synchronize_gpu() { synchronize(kGpu); }

KernelFamily gemm_family(gemm::GemmRung rung, int64_t n) {
  const Tensor a = gpu_randn({n, n}), b = gpu_randn({n, n}), c = zeros({n, n}, kGpu);
  KernelFamily f{std::string("gemm/") + gemm::rung_name(rung),
                 dims({n, n, n}),
                 "f32",
                 Access::Gemm,
                 3.0 * n * n * 4,
                 2.0 * n * n * n,
                 nullptr};
  f.run = [=] {
    gemm::GemmArgs args{.dtype = gemm::GemmDType::Float32,
                        .M = n,
                        .N = n,
                        .K = n,
                        .A = a.data_ptr(),
                        .lda = n,
                        .B = b.data_ptr(),
                        .ldb = n,
                        .C = c.data_ptr(),
                        .ldc = n};
    gemm::launch_gemm(rung, args, static_cast<cudaStream_t>(native_stream(current_stream(kGpu))));
  };
  return f;
}

}  // namespace

std::vector<KernelFamily> kernel_families(int64_t n, int64_t gemm_size) {
  const int64_t rows = n / kRow;
  const double f4 = 4.0 * static_cast<double>(n);  // bytes of one float32 tensor of n elements
  std::vector<KernelFamily> out;
  auto family = [&](std::string name, std::string shape, std::string dtype, Access access, double bytes,
                    std::function<void()> run) {
    out.push_back({std::move(name), std::move(shape), std::move(dtype), access, bytes, 0, std::move(run)});
  };
  const std::string flat = std::to_string(n), matrix = dims({rows, kRow});

  // Copies and elementwise ops.
  const Tensor x = gpu_randn({n}), y = gpu_randn({n});
  const Tensor xb = gpu_randn({n}, kBFloat16), yb = gpu_randn({n}, kBFloat16);
  family("copy/clone", flat, "f32", Access::Contiguous, 2 * f4, [=] { (void)x.clone(); });
  family("copy/cast_to_bf16", flat, "f32>bf16", Access::Contiguous, 1.5 * f4, [=] { (void)x.to(kBFloat16); });
  family("binary/add", flat, "f32", Access::Contiguous, 3 * f4, [=] { (void)add(x, y); });
  family("binary/add", flat, "bf16", Access::Contiguous, 1.5 * f4, [=] { (void)add(xb, yb); });
  family("unary/exp", flat, "f32", Access::Contiguous, 2 * f4, [=] { (void)exp(x); });
  family("unary/gelu", flat, "f32", Access::Contiguous, 2 * f4, [=] { (void)gelu(x); });
  family("swiglu/forward", flat, "f32", Access::Contiguous, 3 * f4, [=] { (void)swiglu(x, y); });
  family("swiglu/forward", flat, "bf16", Access::Contiguous, 1.5 * f4, [=] { (void)swiglu(xb, yb); });
  const Tensor xm = gpu_randn({rows, kRow});
  family("copy/transpose", dims({kRow, rows}), "f32", Access::Strided, 2 * f4,
         [=] { (void)xm.transpose(0, 1).contiguous(); });

  // Reductions.
  family("reduce/sum_all", flat, "f32", Access::Contiguous, f4, [=] { (void)x.sum(); });
  family("reduce/sum_rows", matrix, "f32", Access::Contiguous, f4 + 4.0 * rows, [=] { (void)xm.sum(1); });
  family("reduce/sum_columns", matrix, "f32", Access::Contiguous, f4 + 4.0 * kRow, [=] { (void)xm.sum(0); });
  family("reduce/max_rows", matrix, "f32", Access::Contiguous, f4 + 4.0 * rows, [=] { (void)amax(xm, {1}); });
  family("reduce/var_rows", matrix, "f32", Access::Contiguous, f4 + 4.0 * rows, [=] { (void)var(xm, {1}); });
  family("reduce/argmax_rows", matrix, "f32", Access::Contiguous, f4 + 8.0 * rows, [=] { (void)argmax(xm, 1); });

  // Row-wise normalisations and the loss.
  family("softmax/rows", matrix, "f32", Access::Contiguous, 2 * f4, [=] { (void)softmax(xm, -1); });
  family("softmax/log_rows", matrix, "f32", Access::Contiguous, 2 * f4, [=] { (void)log_softmax(xm, -1); });
  const Tensor w = gpu_randn({kRow}), b = gpu_randn({kRow});
  family("layer_norm/forward", matrix, "f32", Access::Contiguous, 2 * f4 + 8.0 * kRow + 8.0 * rows,
         [=] { (void)layer_norm(xm, {kRow}, w, b); });
  const int64_t ce_rows = n / kVocab;
  const Tensor logits = gpu_randn({ce_rows, kVocab}), targets = randint(0, kVocab, {ce_rows}).to(kGpu);
  family("cross_entropy/forward", dims({ce_rows, kVocab}), "f32", Access::Contiguous, f4 + 8.0 * ce_rows,
         [=] { (void)cross_entropy(logits, targets); });

  // Backward passes through autograd (the forward's kernels run too):
  // compulsory = the forward's bytes + the backward's (read what it saved and
  // the incoming gradient, write the input's gradient).
  const Tensor g = gpu_randn({rows, kRow});
  auto leaf = [=] { return xm.detach().requires_grad_(); };
  family("softmax/forward+backward", matrix, "f32", Access::Contiguous, 5 * f4,
         [=] { softmax(leaf(), -1).backward(g); });
  family("unary/relu_forward+backward", matrix, "f32", Access::Contiguous, 5 * f4, [=] { relu(leaf()).backward(g); });
  // swiglu: forward reads gate, up and writes out (3); backward reads the
  // gradient, gate and up and writes both gradients (5).
  family("swiglu/forward+backward", matrix, "f32", Access::Contiguous, 8 * f4, [=] {
    const Tensor up = xm.detach().requires_grad_();
    swiglu(leaf(), up).backward(g);
  });
  family("layer_norm/forward+backward", matrix, "f32", Access::Contiguous, 5 * f4 + 16.0 * rows + 24.0 * kRow,
         [=] { layer_norm(leaf(), {kRow}, w, b).backward(g); });
  family("cross_entropy/forward+backward", dims({ce_rows, kVocab}), "f32", Access::Contiguous, 3 * f4 + 16.0 * ce_rows,
         [=] { cross_entropy(logits.detach().requires_grad_(), targets).backward(); });
  family("compare/gt", flat, "f32>bool", Access::Contiguous, 2 * f4 + n, [=] { (void)gt(x, y); });
  const Tensor cond = gt(x, 0.0);
  family("where", flat, "f32", Access::Contiguous, 3 * f4 + n, [=] { (void)where(cond, x, y); });

  // Optimizers: read param, grad, state; write param, state.
  {
    Tensor p = gpu_randn({n});
    p.requires_grad_();
    p.set_grad(gpu_randn({n}));
    auto adam = std::make_shared<nn::optim::AdamW>(std::vector<Tensor>{p}, nn::optim::AdamWOptions{});
    adam->step();  // the state exists before the profiled step
    family("optim/adamw", flat, "f32", Access::Contiguous, 7 * f4, [=] { adam->step(); });
    Tensor q = gpu_randn({n});
    q.requires_grad_();
    q.set_grad(gpu_randn({n}));
    auto sgd = std::make_shared<nn::optim::SGD>(std::vector<Tensor>{q}, nn::optim::SGDOptions{}.momentum(0.9));
    sgd->step();
    family("optim/sgd_momentum", flat, "f32", Access::Contiguous, 5 * f4, [=] { sgd->step(); });
  }

  // Indexing: rows of a table picked by index (an embedding's forward).
  const int64_t picks = rows;
  const Tensor table = gpu_randn({kVocab, kRow}), index = randint(0, kVocab, {picks}).to(kGpu);
  family("indexing/index_select_rows", dims({picks, kRow}), "f32", Access::Contiguous, 8.0 * picks * kRow + 8.0 * picks,
         [=] { (void)index_select(table, 0, index); });
  const Tensor gather_index = randint(0, kRow, {rows, kRow}).to(kGpu);
  family("indexing/gather", matrix, "f32", Access::Strided, 2 * f4 + 2 * f4,
         [=] { (void)gather(xm, 1, gather_index); });

  // Random numbers and dropout.
  family("random/randn", flat, "f32", Access::Contiguous, f4, [=] { (void)randn({n}, kGpu); });
  family("dropout", flat, "f32", Access::Contiguous, 2 * f4 + n, [=] { (void)dropout(x, 0.1, true); });

  // Fused attention (kernels/cuda/attention.cu): 4 heads of 64, 128 queries
  // and keys, forward, then forward and backward. Compulsory: q, k, v read and
  // the output and log-sum-exp written (backward: those and dO read, dQ, dK,
  // dV written); flops: the 2 products forward, 5 backward, 2*L*S*E each.
  {
    constexpr int64_t kHeads = 4, kLen = 128, kDim = 64;
    const double one = 4.0 * kHeads * kLen * kDim, lse = 4.0 * kHeads * kLen;
    const double product = 2.0 * kHeads * kLen * kLen * kDim;
    const Tensor q = gpu_randn({kHeads, kLen, kDim}), k = gpu_randn({kHeads, kLen, kDim}),
                 v = gpu_randn({kHeads, kLen, kDim}), dout = gpu_randn({kHeads, kLen, kDim});
    const std::string shape = dims({kHeads, kLen, kLen, kDim});
    out.push_back({"attention/forward", shape, "f32", Access::Fused, 4 * one + lse, 2 * product,
                   [=] { (void)scaled_dot_product_attention(q, k, v); }});
    out.push_back({"attention/forward+backward", shape, "f32", Access::Fused, 11 * one + 2 * lse, 7 * product, [=] {
                     Tensor ql = q.detach().requires_grad_(), kl = k.detach().requires_grad_(),
                            vl = v.detach().requires_grad_();
                     scaled_dot_product_attention(ql, kl, vl).backward(dout);
                   }});
  }

  if (gemm_size > 0)
    for (int r = 1; r <= 7; ++r) out.push_back(gemm_family(static_cast<gemm::GemmRung>(r), gemm_size));
  synchronize_gpu();
  return out;
}

std::vector<emulator::KernelProfile> profile_family(const KernelFamily& family) {
  synchronize_gpu();
#if ANVIL_CUDA_EMULATOR
  emulator::take_profiles();
  emulator::set_profiling(true);
#endif
  family.run();
  synchronize_gpu();
#if ANVIL_CUDA_EMULATOR
  emulator::set_profiling(false);
  return emulator::take_profiles();
#else
  return {};  // a real GPU: the counters come from Nsight Compute (scripts/gpu_check.sh ncu)
#endif
}

}  // namespace anvil::kernel_report
