// softmax / log_softmax on CUDA against the CPU backend: every path of
// kernels/cuda/softmax.cu (warp per row, block per row with and without the
// row in registers, the inner-dim path, non-contiguous views), every floating
// dtype, forward and backward.
#include <gtest/gtest.h>

#include <tuple>

#include "core/ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;

constexpr DType kFloatDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

// Wider than tolerance_for: a 16-bit output of exp() and a different sum order.
test::Tolerance tol(DType d) {
  if (d == kFloat16) return {4e-3, 2e-3};
  if (d == kBFloat16) return {2e-2, 1e-2};
  if (d == kFloat32) return {2e-5, 2e-6};
  return test::tolerance_for(d);
}

void check_forward(const Tensor& x, int64_t dim) {
  for (bool log : {false, true}) {
    const Tensor want = log ? log_softmax(x, dim) : softmax(x, dim);
    const Tensor got = log ? log_softmax(x.cuda(), dim) : softmax(x.cuda(), dim);
    EXPECT_TRUE(all_close(got, want, tol(x.dtype())))
        << (log ? "log_softmax" : "softmax") << " shape " << x.shape_str() << " dim " << dim;
  }
}

TEST(CudaSoftmax, LastDimAllPathsAllDtypes) {
  ANVIL_SKIP_WITHOUT_GPU();
  // 1, 3: warp per row with idle lanes; 36, 200: 16-byte accesses with whole vectors past the row's
  // end (33: one element per access); 1000: warp with 32 per lane; 1025..8192: block with
  // registers; 4097 (odd); 20000: online two-pass block kernel.
  for (DType dt : kFloatDTypes)
    for (int64_t cols : {1, 3, 32, 33, 36, 200, 1000, 1024, 1025, 4097, 8192, 20000}) {
      const int64_t rows = cols > 4096 ? 3 : 37;
      check_forward(random_tensor({rows, cols}, dt, cols) * 3.0, 1);
    }
}

TEST(CudaSoftmax, InnerDimAndNegativeDim) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : kFloatDTypes) {
    const Tensor x = random_tensor({5, 7, 9}, dt, 3);
    check_forward(x, 0);
    check_forward(x, 1);
    check_forward(x, -1);
  }
}

TEST(CudaSoftmax, NonContiguousEmptyAndScalar) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({6, 130}, kFloat32, 4);
  for (int64_t dim : {0, 1}) {
    const Tensor t = x.transpose(0, 1);  // [130, 6], strided
    EXPECT_CUDA_CLOSE(softmax(x.cuda().transpose(0, 1), dim), softmax(t, dim), tol(kFloat32));
    EXPECT_CUDA_CLOSE(log_softmax(x.cuda().slice(1, 1, 130, 3), dim), log_softmax(x.slice(1, 1, 130, 3), dim),
                      tol(kFloat32));
  }
  const Tensor empty_rows = random_tensor({0, 5}, kFloat32, 5);
  EXPECT_EQ(softmax(empty_rows.cuda(), 1).numel(), 0);
  const Tensor s = random_tensor({}, kFloat32, 6);
  EXPECT_CUDA_CLOSE(softmax(s.cuda(), 0), softmax(s, 0));
}

TEST(CudaSoftmax, ExtremeValues) {
  ANVIL_SKIP_WITHOUT_GPU();
  // Large logits (overflow without the max shift) and -inf entries.
  const Tensor x = from_vector<float>({1000.f, 999.f, -INFINITY, 0.f, 1e4f, 1e4f, -1e4f, -INFINITY}, {2, 4});
  check_forward(x, 1);
  check_forward(x.reshape({4, 2}), 0);
  // A lone +inf makes the whole row NaN on the CPU (exp(inf - inf)); the
  // online paths (inner dim, rows over 8192) must agree, not give 0 and NaN.
  const Tensor with_inf = from_vector<float>({1.f, INFINITY, -2.f, 0.f, 3.f, 4.f}, {2, 3});
  check_forward(with_inf, 1);
  check_forward(with_inf, 0);
  Tensor long_row = random_tensor({2, 9000}, kFloat32, 7);
  long_row.slice(1, 4500, 4501).fill_(Scalar(static_cast<double>(INFINITY)));
  check_forward(long_row, 1);
}

TEST(CudaSoftmax, Backward) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    for (auto [rows, cols, dim] :
         {std::tuple<int64_t, int64_t, int64_t>{37, 3, 1}, {6, 200, 1}, {5, 1000, 1}, {3, 4097, 1}, {9, 11, 0}}) {
      for (bool log : {false, true}) {
        const Tensor x = random_tensor({rows, cols}, dt, rows * cols);
        const Tensor g = random_tensor({rows, cols}, dt, rows + cols);
        Tensor xc = x.clone().requires_grad_();
        Tensor xg = x.cuda().requires_grad_();
        const Tensor yc = log ? log_softmax(xc, dim) : softmax(xc, dim);
        const Tensor yg = log ? log_softmax(xg, dim) : softmax(xg, dim);
        yc.backward(g);
        yg.backward(g.cuda());
        EXPECT_TRUE(all_close(xg.grad(), xc.grad(), tol(dt)))
            << (log ? "log_softmax" : "softmax") << " backward, shape [" << rows << ", " << cols << "], dim " << dim;
      }
    }
  }
}

}  // namespace
}  // namespace anvil
