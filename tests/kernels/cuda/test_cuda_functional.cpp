// The composed functional ops (core/ops/einsum.h, core/ops/nn_functional.h)
// on the CUDA backend against the CPU backend: forward values and the
// gradients of every input, on the same random float32 inputs.
#include <gtest/gtest.h>

#include <functional>

#include "core/autograd/engine.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Run {
  Tensor out;
  std::vector<Tensor> grads;
};

Run run_on(Device device, const Fn& f, const std::vector<Tensor>& cpu_inputs, const Tensor& cpu_upstream) {
  std::vector<Tensor> in;
  for (const Tensor& t : cpu_inputs) in.push_back(t.to(device).detach().requires_grad_(true));
  Run r;
  r.out = f(in);
  auto grads = autograd::grad({(r.out * cpu_upstream.to(device)).sum()}, in, {}, {}, /*allow_unused=*/true);
  for (const Tensor& g : grads) r.grads.push_back(g.defined() ? g.cpu() : Tensor());
  r.out = r.out.detach().cpu();
  return r;
}

// f's output and input gradients on CUDA match the CPU's.
void expect_cuda_matches_cpu(const char* what, const Fn& f, const std::vector<Tensor>& inputs,
                             test::Tolerance tol = {1e-4, 1e-5}) {
  SCOPED_TRACE(what);
  Tensor probe;
  {
    NoGradGuard no_grad;
    probe = f(inputs);
  }
  Tensor upstream = test::random_tensor(probe.shape(), probe.dtype(), 99);
  Run cpu = run_on(Device::cpu(), f, inputs, upstream);
  Run cuda = run_on(Device::cuda(0), f, inputs, upstream);
  EXPECT_CUDA_CLOSE(cuda.out, cpu.out, tol);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(cuda.grads[i].defined(), cpu.grads[i].defined()) << "input " << i;
    if (cpu.grads[i].defined()) {
      EXPECT_CUDA_CLOSE(cuda.grads[i], cpu.grads[i], tol) << "gradient of input " << i;
    }
  }
}

Tensor rnd(const Shape& s, uint64_t seed = 0) { return test::random_tensor(s, kFloat32, seed); }

TEST(CudaFunctional, Einsum) {
  ANVIL_SKIP_WITHOUT_GPU();
  expect_cuda_matches_cpu("bhqd,bhkd->bhqk", [](auto& t) { return einsum("bhqd,bhkd->bhqk", t); },
                          {rnd({2, 2, 5, 4}), rnd({2, 2, 3, 4}, 1)});
  expect_cuda_matches_cpu("iij,j->i (diagonal, broadcast multiply)", [](auto& t) { return einsum("iij,j->i", t); },
                          {rnd({3, 3, 4}, 2), rnd({4}, 3)});
  expect_cuda_matches_cpu("...ij,...jk", [](auto& t) { return einsum("...ij,...jk", t); },
                          {rnd({2, 1, 3, 4}, 4), rnd({5, 4, 2}, 5)});
}

TEST(CudaFunctional, PadAndInterpolate) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular})
    expect_cuda_matches_cpu("pad",
                            [mode](auto& t) {
                              return pad(t[0], {2, 1, 1, 2}, mode, 0.25);
                            },
                            {rnd({2, 3, 4, 5}, 6)});
  for (bool align : {false, true}) {
    InterpolateOptions o;
    o.size = {7, 5};
    o.mode = InterpolateMode::Bilinear;
    o.align_corners = align;
    expect_cuda_matches_cpu("bilinear", [o](auto& t) { return interpolate(t[0], o); }, {rnd({2, 3, 4, 6}, 7)});
  }
  InterpolateOptions nearest;
  nearest.scale_factor = {1.5, 0.5};
  expect_cuda_matches_cpu("nearest", [nearest](auto& t) { return interpolate(t[0], nearest); }, {rnd({2, 3, 4, 6}, 8)});
}

TEST(CudaFunctional, ConvolutionsAndPools) {
  ANVIL_SKIP_WITHOUT_GPU();
  expect_cuda_matches_cpu("conv1d",
                          [](auto& t) {
                            return conv1d(t[0], t[1], t[2], {2, 1, 2, 2});
                          },
                          {rnd({2, 4, 11}, 9), rnd({6, 2, 3}, 10), rnd({6}, 11)});
  ConvTranspose2dOptions ct;
  ct.stride = {2, 1};
  ct.padding = {1, 0};
  ct.output_padding = {1, 0};
  ct.groups = 2;
  expect_cuda_matches_cpu("conv_transpose2d", [ct](auto& t) { return conv_transpose2d(t[0], t[1], t[2], ct); },
                          {rnd({2, 4, 3, 4}, 12), rnd({4, 3, 3, 2}, 13), rnd({6}, 14)});
  ConvTranspose2dOptions dilated;
  dilated.padding = {1, 1};
  dilated.output_padding = {1, 0};
  dilated.dilation = {2, 1};
  expect_cuda_matches_cpu("conv_transpose2d, output_padding >= stride",
                          [dilated](auto& t) { return conv_transpose2d(t[0], t[1], {}, dilated); },
                          {rnd({1, 2, 3, 3}, 15), rnd({2, 3, 3, 3}, 16)});
  Pool2dOptions ceil;
  ceil.kernel = {3, 2};
  ceil.stride = {2, 3};
  ceil.padding = {1, 1};
  ceil.ceil_mode = true;
  ceil.count_include_pad = false;
  expect_cuda_matches_cpu("max_pool2d ceil_mode", [ceil](auto& t) { return max_pool2d(t[0], ceil); },
                          {rnd({2, 3, 8, 7}, 17)});
  expect_cuda_matches_cpu("avg_pool2d ceil_mode", [ceil](auto& t) { return avg_pool2d(t[0], ceil); },
                          {rnd({2, 3, 8, 7}, 18)});
  Pool1dOptions p1{3, 2, 1, true, true};
  expect_cuda_matches_cpu("max_pool1d", [p1](auto& t) { return max_pool1d(t[0], p1); }, {rnd({2, 3, 10}, 19)});
  expect_cuda_matches_cpu("avg_pool1d", [p1](auto& t) { return avg_pool1d(t[0], p1); }, {rnd({2, 3, 10}, 20)});
  expect_cuda_matches_cpu("adaptive_max_pool2d",
                          [](auto& t) {
                            return adaptive_max_pool2d(t[0], {3, 4});
                          },
                          {rnd({2, 3, 7, 9}, 21)});
  expect_cuda_matches_cpu("adaptive_max_pool1d", [](auto& t) { return adaptive_max_pool1d(t[0], 4); },
                          {rnd({2, 3, 10}, 22)});
}

TEST(CudaFunctional, Norms) {
  ANVIL_SKIP_WITHOUT_GPU();
  expect_cuda_matches_cpu("group_norm", [](auto& t) { return group_norm(t[0], 2, t[1], t[2]); },
                          {rnd({2, 4, 3, 5}, 23), rnd({4}, 24), rnd({4}, 25)});
  expect_cuda_matches_cpu("rms_norm", [](auto& t) { return rms_norm(t[0], {6}, t[1]); },
                          {rnd({4, 6}, 26), rnd({6}, 27)});
  // rms_norm's own kernel: long rows (many strides of a warp), each floating dtype, no weight.
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    Tensor x = test::random_tensor({5, 1000}, dtype, 44), w = test::random_tensor({1000}, dtype, 45);
    EXPECT_CUDA_CLOSE(rms_norm(x.cuda(), {1000}, w.cuda()), rms_norm(x, {1000}, w)) << dtype_name(dtype);
    EXPECT_CUDA_CLOSE(rms_norm(x.cuda(), {1000}), rms_norm(x, {1000})) << dtype_name(dtype);
  }
  EXPECT_CUDA_CLOSE(rms_norm(rnd({3, 2, 7}, 46).cuda().transpose(0, 2), {2, 3}),
                    rms_norm(rnd({3, 2, 7}, 46).transpose(0, 2), {2, 3}));  // non-contiguous input
  expect_cuda_matches_cpu("instance_norm", [](auto& t) { return instance_norm(t[0], {}, {}, t[1], t[2]); },
                          {rnd({2, 3, 7}, 28), rnd({3}, 29), rnd({3}, 30)});
  // Running stats move the same way on both devices.
  Tensor rm = rnd({3}, 31), rv = test::random_uniform_tensor({3}, kFloat32, 0.5, 2, 32), x = rnd({2, 3, 7}, 33);
  Tensor rm_cuda = rm.cuda(), rv_cuda = rv.cuda();
  instance_norm(x, rm, rv);
  instance_norm(x.cuda(), rm_cuda, rv_cuda);
  EXPECT_CUDA_CLOSE(rm_cuda, rm);
  EXPECT_CUDA_CLOSE(rv_cuda, rv);
}

TEST(CudaFunctional, LossesDistancesAndOneHot) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor logp = log_softmax(rnd({4, 5}, 34), 1), p = softmax(rnd({4, 5}, 35), 1);
  for (bool log_target : {false, true})
    expect_cuda_matches_cpu("kl_div",
                            [log_target](auto& t) { return kl_div(t[0], t[1], KLDivReduction::BatchMean, log_target); },
                            {logp, log_target ? logp.flip(0) : p});
  expect_cuda_matches_cpu("smooth_l1_loss", [](auto& t) { return smooth_l1_loss(t[0], t[1], Reduction::None, 0.5); },
                          {rnd({4, 5}, 36), rnd({4, 5}, 37)});
  expect_cuda_matches_cpu("huber_loss", [](auto& t) { return huber_loss(t[0], t[1], Reduction::Mean, 0.5); },
                          {rnd({4, 5}, 38), rnd({4, 5}, 39)});
  expect_cuda_matches_cpu("cosine_similarity", [](auto& t) { return cosine_similarity(t[0], t[1], 1); },
                          {rnd({4, 5}, 40), rnd({1, 5}, 41)});
  expect_cuda_matches_cpu("pairwise_distance", [](auto& t) { return pairwise_distance(t[0], t[1], 3.0); },
                          {rnd({4, 5}, 42), rnd({4, 5}, 43)});
  Tensor idx = from_vector<int64_t>({3, 0, 2, 2}, {2, 2});
  Tensor h = one_hot(idx.cuda(), 5);
  EXPECT_TRUE(h.device().is_cuda());
  EXPECT_EQ(h.cpu().to_vector<int64_t>(), one_hot(idx, 5).to_vector<int64_t>());
}

// embedding with padding_idx: the lookup and the weight's gradient on CUDA
// match the CPU's, and the padding row's gradient is exactly 0 on both,
// with random indices that hit the padding row and repeat others.
TEST(CudaFunctional, EmbeddingPaddingIdx) {
  ANVIL_SKIP_WITHOUT_GPU();
  const int64_t rows = 20, dim = 12;
  for (int64_t padding_idx : {int64_t{3}, int64_t{-1}}) {
    SCOPED_TRACE(padding_idx);
    const Tensor w = rnd({rows, dim}, 30);
    Tensor ids = (test::random_tensor({4, 9}, kFloat32, 31).abs() * 7).to(kInt64).remainder(rows);
    ids.view({-1}).slice(0, 0, 5).fill_(padding_idx < 0 ? padding_idx + rows
                                                        : padding_idx);  // the padding row, read 5 times
    const Tensor upstream = rnd({4, 9, dim}, 32);
    Tensor wc = w.clone().requires_grad_(true), wg = w.cuda().requires_grad_(true);
    const Tensor yc = embedding(wc, ids, padding_idx), yg = embedding(wg, ids.cuda(), padding_idx);
    EXPECT_CUDA_CLOSE(yg, yc, {0, 0});
    yc.backward(upstream);
    yg.backward(upstream.cuda());
    EXPECT_CUDA_CLOSE(wg.grad(), wc.grad(), {1e-5, 1e-6});
    const int64_t pad_row = padding_idx < 0 ? padding_idx + rows : padding_idx;
    EXPECT_EQ(wg.grad().cpu()[pad_row].abs().sum().item<double>(), 0.0);
    EXPECT_EQ(wc.grad()[pad_row].abs().sum().item<double>(), 0.0);
    EXPECT_GT(wc.grad().abs().sum().item<double>(), 0.0);
  }
}

}  // namespace
}  // namespace anvil
