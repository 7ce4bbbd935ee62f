// CUDA copy (contiguous, tiled transpose, strided, casts) and fill against the CPU backend.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

TEST(CudaCopy, RoundTripAllDtypesOddSizes) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : kAllDtypes)
    for (int64_t n : {0, 1, 3, 1023, 65537}) {
      Tensor x = test::random_tensor({n}, dt, 1 + n);
      EXPECT_CUDA_CLOSE(x.cuda(), x) << dt << " n=" << n;
    }
}

TEST(CudaCopy, CastsEveryPairLikeCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType from : kAllDtypes)
    for (DType to : kAllDtypes) {
      Tensor x = test::random_tensor({37, 5}, from, 7);
      if (is_floating(from)) x = mul(x, Scalar(50.0));  // exercise truncation and uint8 wrap
      EXPECT_CUDA_CLOSE(x.cuda().to(to), x.to(to), test::Tolerance{}) << from << " -> " << to;
    }
}

TEST(CudaCopy, SpecialFloatToIntegerCastsMatchCpuExactly) {
  ANVIL_SKIP_WITHOUT_GPU();
  // NaN, infinities and out-of-range values (core/base/float_to_int.h): a
  // GPU's cvt saturates and x86 does not, so both follow one written rule.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor v = from_vector(std::vector<double>{nan, inf, -inf, 1e30, -1e30, -1.0, 300.7, -2.7, 2.7, 4e9});
  for (DType from : {kFloat64, kFloat32, kFloat16, kBFloat16})
    for (DType to : {kInt64, kInt32, kUInt8, kBool}) {
      const Tensor x = v.to(from);
      const Tensor got = x.cuda().to(to).cpu(), want = x.to(to);
      EXPECT_EQ(got.to(kInt64).to_vector<int64_t>(), want.to(kInt64).to_vector<int64_t>()) << from << " -> " << to;
    }
  EXPECT_EQ(full({3}, nan, TensorOptions(kInt32).device(Device::cuda(0))).cpu().to_vector<int32_t>(),
            (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(full({3}, inf, TensorOptions(kInt64).device(Device::cuda(0))).cpu().to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MAX, INT64_MAX, INT64_MAX}));
}

TEST(CudaCopy, TransposeAndPermuteContiguous) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat16, kFloat64, kUInt8}) {
    Tensor x = test::random_tensor({67, 129}, dt, 3);
    EXPECT_CUDA_CLOSE(x.cuda().t().contiguous(), x.t().contiguous()) << dt;
    Tensor y = test::random_tensor({3, 33, 65, 5}, dt, 4);
    EXPECT_CUDA_CLOSE(y.cuda().permute({0, 2, 1, 3}).contiguous(), y.permute({0, 2, 1, 3}).contiguous()) << dt;
    EXPECT_CUDA_CLOSE(y.cuda().permute({3, 1, 2, 0}).contiguous(), y.permute({3, 1, 2, 0}).contiguous()) << dt;
  }
}

TEST(CudaCopy, SlicedAndBroadcastSources) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({40, 50}, kFloat32, 5);
  EXPECT_CUDA_CLOSE(x.cuda().slice(1, 3, 47, 2).contiguous(), x.slice(1, 3, 47, 2).contiguous());
  Tensor row = test::random_tensor({1, 50}, kFloat32, 6);
  EXPECT_CUDA_CLOSE(row.cuda().expand({40, 50}).contiguous(), row.expand({40, 50}).contiguous());
  // misaligned contiguous source (offset by one element)
  EXPECT_CUDA_CLOSE(x.cuda().reshape({2000}).slice(0, 1, 2000).to(kFloat16),
                    x.reshape({2000}).slice(0, 1, 2000).to(kFloat16));
}

TEST(CudaCopy, FillAllDtypes) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : kAllDtypes)
    for (double v : {0.0, 1.0, -2.5, 300.7}) {
      Tensor want = full({1023}, Scalar(v), TensorOptions().dtype(dt));
      Tensor got = full({1023}, Scalar(v), TensorOptions().dtype(dt).device(Device::cuda(0)));
      EXPECT_CUDA_CLOSE(got, want) << dt << " " << v;
    }
  Tensor x = zeros({8, 9}, TensorOptions().device(Device::cuda(0)));
  x.t().slice(0, 1, 5).fill_(Scalar(3.0));  // strided fill
  Tensor y = zeros({8, 9});
  y.t().slice(0, 1, 5).fill_(Scalar(3.0));
  EXPECT_CUDA_CLOSE(x, y);
}

}  // namespace
}  // namespace anvil
