// batch_norm on CUDA (cuDNN; on the emulated GPU, the hand-written kernels of
// kernels/cudnn/norm_pool_kernels.cu) against the CPU backend: training (output,
// running statistics with the unbiased variance, gradients), evaluation
// (output, gradients with constant statistics), with and without affine
// parameters, [N, C], [N, C, L] and [N, C, H, W] inputs, non-contiguous
// inputs, every floating dtype.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;
using test::random_uniform_tensor;
using test::shape_text;
using test::Tolerance;

struct BnResult {
  std::vector<Tensor> values;  // y, running_mean, running_var, grad x, grad weight, grad bias
};

// Per-channel sums over many values: the absolute tolerance grows with them.
Tolerance bn_tolerance(DType dtype) {
  Tolerance t = test::tolerance_for(dtype);
  if (dtype == kFloat32) t = {1e-4, 1e-4};  // cuDNN accumulates statistics in float32, the CPU in double
  if (dtype == kFloat16) t = {4e-3, 4e-3};
  if (dtype == kBFloat16) t = {3e-2, 3e-2};
  return t;
}

BnResult run_bn(Device d, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                const Tensor& g, const BatchNormOptions& o, bool affine, bool permuted) {
  Tensor xd = x.to(d).detach().requires_grad_();
  Tensor wd = affine ? w.to(d).detach().requires_grad_() : Tensor();
  Tensor bd = affine ? b.to(d).detach().requires_grad_() : Tensor();
  Tensor rmd = rm.to(d).clone(), rvd = rv.to(d).clone();
  // A permuted input: the same values stored channels-last.
  Tensor in = permuted ? xd.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}) : xd;
  Tensor y = batch_norm(in, wd, bd, rmd, rvd, o);
  sum(y * g.to(d)).backward();
  return {{y, rmd, rvd, xd.grad(), affine ? wd.grad() : Tensor(), affine ? bd.grad() : Tensor()}};
}

void expect_bn_matches(const Shape& shape, DType dtype, bool training, bool affine, uint64_t seed,
                       bool permuted = false) {
  SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape) << ", " << dtype_name(dtype)
                                    << (training ? ", training" : ", eval") << (affine ? ", affine" : "")
                                    << (permuted ? ", permuted input" : ""));
  const int64_t c = shape[1];
  // A non-zero mean checks that the variance is computed about the mean.
  Tensor x = (random_tensor(shape, kFloat64, seed) * 2.0 + 3.0).to(dtype);
  Tensor w = random_tensor({c}, dtype, seed + 1), b = random_tensor({c}, dtype, seed + 2);
  Tensor rm = random_tensor({c}, kFloat32, seed + 3);
  Tensor rv = random_uniform_tensor({c}, kFloat32, 0.5, 2.0, seed + 4);
  Tensor g = random_tensor(shape, dtype, seed + 5);
  BatchNormOptions o{training, 0.25, 1e-5};
  const BnResult want = run_bn(Device::cpu(), x, w, b, rm, rv, g, o, affine, permuted);
  const BnResult got = run_bn(Device::cuda(0), x, w, b, rm, rv, g, o, affine, permuted);
  const char* names[] = {"output", "running_mean", "running_var", "grad input", "grad weight", "grad bias"};
  for (size_t i = 0; i < want.values.size(); ++i) {
    if (!want.values[i].defined()) continue;
    EXPECT_CUDA_CLOSE(got.values[i], want.values[i], bn_tolerance(dtype)) << names[i];
  }
}

TEST(CudnnBatchNorm, TrainingMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const Shape& shape : {Shape{8, 5}, Shape{4, 3, 17}, Shape{3, 6, 7, 9}, Shape{16, 32, 8, 8}}) {
      expect_bn_matches(shape, dtype, true, true, seed += 10);
      expect_bn_matches(shape, dtype, true, false, seed += 10);
    }
  }
}

TEST(CudnnBatchNorm, EvalMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const Shape& shape : {Shape{8, 5}, Shape{3, 6, 7, 9}}) {
      expect_bn_matches(shape, dtype, false, true, seed += 10);
      expect_bn_matches(shape, dtype, false, false, seed += 10);
    }
  }
}

TEST(CudnnBatchNorm, NonContiguousInput) {
  ANVIL_SKIP_WITHOUT_GPU();
  expect_bn_matches({4, 5, 6, 7}, kFloat32, true, true, 900, true);
  expect_bn_matches({4, 5, 6, 7}, kFloat32, false, true, 901, true);
}

TEST(CudnnBatchNorm, RunningStatsUseUnbiasedVariance) {
  ANVIL_SKIP_WITHOUT_GPU();
  // Two values per channel, momentum 1: running_var becomes the unbiased
  // batch variance exactly ((a - b)^2 / 2), running_mean the batch mean.
  Tensor x = from_vector<float>({1.0f, 4.0f, 3.0f, 10.0f}, {2, 2}).cuda();
  Tensor rm = zeros({2}).cuda(), rv = ones({2}).cuda();
  batch_norm(x, Tensor(), Tensor(), rm, rv, BatchNormOptions{true, 1.0, 1e-5});
  const std::vector<float> mean = rm.cpu().to_vector<float>(), var = rv.cpu().to_vector<float>();
  EXPECT_FLOAT_EQ(mean[0], 2.0f);
  EXPECT_FLOAT_EQ(mean[1], 7.0f);
  EXPECT_FLOAT_EQ(var[0], 2.0f);
  EXPECT_FLOAT_EQ(var[1], 18.0f);
}

}  // namespace
}  // namespace anvil
