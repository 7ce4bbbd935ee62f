// Philox random numbers and dropout on CUDA give the CPU backend's numbers for
// the same seed and offset: bit-identical for uniform values (every dtype) and
// dropout masks, within 1e-6 for normal values (sin/cos/log may differ by an
// ulp between the GPU's and glibc's precise versions).
#include <gtest/gtest.h>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/random_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

Tensor fill_random(const Shape& shape, DType dt, const RandomParams& p, DeviceType where, bool strided = false) {
  const Device dev = where == DeviceType::CPU ? Device::cpu() : Device::cuda(0);
  Tensor t = zeros(strided ? Shape{shape[1], shape[0]} : shape, TensorOptions().dtype(dt).device(dev));
  if (strided) t = t.transpose(0, 1);
  kernel_for<kernel::Random>(where)(t.view_of(), p);
  return t;
}

TEST(CudaRandom, UniformIsBitIdenticalToCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8}) {
    for (int64_t n : {1, 3, 4, 5, 1000, 4097, 100003}) {
      RandomParams p;
      p.kind = RandomKind::Uniform;
      p.seed = 1234 + n;
      p.offset = 17;
      p.a = dt == kUInt8 ? 0 : -3;
      p.b = dt == kUInt8 ? 200 : 5;
      const Tensor c = fill_random({n}, dt, p, DeviceType::CPU), g = fill_random({n}, dt, p, DeviceType::CUDA);
      EXPECT_TRUE(test::all_close(g, c, {0, 0})) << dt << " n=" << n;
    }
  }
}

TEST(CudaRandom, StridedOutputUsesLogicalIndex) {
  ANVIL_SKIP_WITHOUT_GPU();
  RandomParams p;
  p.seed = 7;
  p.offset = 3;
  const Tensor c = fill_random({37, 5}, kFloat32, p, DeviceType::CPU);
  const Tensor g = fill_random({37, 5}, kFloat32, p, DeviceType::CUDA, /*strided=*/true);
  EXPECT_TRUE(test::all_close(g.contiguous(), c, {0, 0}));
}

TEST(CudaRandom, NormalMatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    RandomParams p;
    p.kind = RandomKind::Normal;
    p.a = 0.5;
    p.b = 2.0;
    p.seed = 99;
    p.offset = 1;
    const Tensor c = fill_random({100001}, dt, p, DeviceType::CPU), g = fill_random({100001}, dt, p, DeviceType::CUDA);
    // float32/float64: 1e-6 relative. 16-bit: a one-ulp difference before rounding may flip one rounding.
    const test::Tolerance tol = dt == kFloat16    ? test::Tolerance{1e-3, 1e-6}
                                : dt == kBFloat16 ? test::Tolerance{8e-3, 1e-6}
                                                  : test::Tolerance{1e-6, 1e-6};
    EXPECT_TRUE(test::all_close(g, c, tol)) << dt;
  }
  RandomParams bad;
  bad.kind = RandomKind::Normal;
  Tensor ints = zeros({4}, TensorOptions().dtype(kInt32).device(Device::cuda(0)));
  EXPECT_THROW(kernel_for<kernel::Random>(DeviceType::CUDA)(ints.view_of(), bad), Error);
}

TEST(CudaRandom, DropoutMatchesCpuExactly) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (double p : {0.0, 0.1, 0.5, 1.0}) {
      const Tensor x = test::random_tensor({13, 77}, dt, 5);
      Tensor out_c = empty(x.shape(), x.options()), mask_c = empty(x.shape(), x.options().dtype(kUInt8));
      kernel_for<kernel::Dropout>(DeviceType::CPU)(out_c.view_of(), mask_c.view_of(), x.view_of(), p, 42, 5);
      const Tensor xg = x.cuda();
      Tensor out_g = empty(x.shape(), xg.options()), mask_g = empty(x.shape(), xg.options().dtype(kUInt8));
      kernel_for<kernel::Dropout>(DeviceType::CUDA)(out_g.view_of(), mask_g.view_of(), xg.view_of(), p, 42, 5);
      EXPECT_TRUE(test::all_close(mask_g, mask_c, {0, 0})) << dt << " p=" << p;
      EXPECT_TRUE(test::all_close(out_g, out_c, {0, 0})) << dt << " p=" << p;
    }
  }
  // Contiguous but not aligned for the kernel's 4-element vector accesses
  // (views starting one element in): the scalar path, the same numbers.
  {
    const Tensor base = test::random_tensor({1002}, kFloat32, 8);
    const Tensor x = base.slice(0, 1, 1002);
    Tensor out_c = empty({1001}), mask_c = empty({1001}, kUInt8);
    kernel_for<kernel::Dropout>(DeviceType::CPU)(out_c.view_of(), mask_c.view_of(), x.view_of(), 0.4, 3, 4);
    const Tensor xg = base.cuda().slice(0, 1, 1002);
    Tensor out_g = empty({1002}).cuda().slice(0, 1, 1002), mask_g = empty({1002}, kUInt8).cuda().slice(0, 1, 1002);
    kernel_for<kernel::Dropout>(DeviceType::CUDA)(out_g.view_of(), mask_g.view_of(), xg.view_of(), 0.4, 3, 4);
    EXPECT_TRUE(test::all_close(mask_g, mask_c, {0, 0}));
    EXPECT_TRUE(test::all_close(out_g, out_c, {0, 0}));
  }
  // Strided input and outputs, and no elements.
  const Tensor x = test::random_tensor({20, 9}, kFloat32, 6).transpose(0, 1);
  Tensor out_c = empty({9, 20}), mask_c = empty({9, 20}, kUInt8);
  kernel_for<kernel::Dropout>(DeviceType::CPU)(out_c.view_of(), mask_c.view_of(), x.view_of(), 0.3, 1, 2);
  const Tensor xs = test::random_tensor({20, 9}, kFloat32, 6).cuda().transpose(0, 1);
  Tensor out_g = zeros({20, 9}).cuda().transpose(0, 1), mask_g = zeros({20, 9}, kUInt8).cuda().transpose(0, 1);
  kernel_for<kernel::Dropout>(DeviceType::CUDA)(out_g.view_of(), mask_g.view_of(), xs.view_of(), 0.3, 1, 2);
  EXPECT_TRUE(test::all_close(mask_g.contiguous(), mask_c, {0, 0}));
  EXPECT_TRUE(test::all_close(out_g.contiguous(), out_c, {0, 0}));
  Tensor e = empty({0}).cuda(), em = empty({0}, kUInt8).cuda();
  EXPECT_NO_THROW(kernel_for<kernel::Dropout>(DeviceType::CUDA)(e.view_of(), em.view_of(), e.view_of(), 0.5, 1, 2));
}

}  // namespace
}  // namespace anvil
