// Max and average pooling on CUDA against the CPU backend: forward and
// gradient over kernel/stride/padding, count_include_pad, ceil-mode output
// sizes (backend level), 3-D inputs, ties (the first maximum gets the
// gradient) and NaN.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/runtime.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;

struct PoolCase {
  Shape input;
  Pool2dOptions o;
};

void expect_pool_matches(PoolKind kind, const Tensor& x, const Pool2dOptions& o, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << (kind == PoolKind::Max ? "max" : "avg") << " pool, input " << x.shape_str()
                                    << ", kernel " << o.kernel[0] << "x" << o.kernel[1] << ", stride " << o.stride[0]
                                    << "," << o.stride[1] << ", padding " << o.padding[0] << "," << o.padding[1]
                                    << ", count_include_pad " << o.count_include_pad << ", " << dtype_name(x.dtype()));
  auto pool = [&](const Tensor& t) { return kind == PoolKind::Max ? max_pool2d(t, o) : avg_pool2d(t, o); };
  Tensor g = random_tensor(pool(x).shape(), x.dtype(), seed);
  auto run = [&](Device d) {
    Tensor xd = x.to(d).detach().requires_grad_();
    Tensor y = pool(xd);
    sum(y * g.to(d)).backward();
    return std::vector<Tensor>{y, xd.grad()};
  };
  const std::vector<Tensor> want = run(Device::cpu()), got = run(Device::cuda(0));
  EXPECT_CUDA_CLOSE(got[0], want[0]) << "output";
  EXPECT_CUDA_CLOSE(got[1], want[1]) << "grad input";
}

std::vector<PoolCase> cases() {
  std::vector<PoolCase> v;
  v.push_back({{2, 3, 8, 8}, Pool2dOptions{{2, 2}, {0, 0}, {0, 0}, true}});
  v.push_back({{2, 3, 9, 7}, Pool2dOptions{{3, 3}, {2, 2}, {1, 1}, true}});  // overlapping, padded
  v.push_back({{2, 3, 9, 7}, Pool2dOptions{{3, 3}, {2, 2}, {1, 1}, false}});
  v.push_back({{1, 2, 11, 13}, Pool2dOptions{{3, 2}, {1, 2}, {1, 1}, false}});
  v.push_back({{1, 1, 5, 5}, Pool2dOptions{{5, 5}, {1, 1}, {2, 2}, true}});
  v.push_back({{3, 4, 6}, Pool2dOptions{{2, 3}, {2, 3}, {0, 0}, true}});  // [C, H, W]
  v.push_back({{4, 16, 32, 32}, Pool2dOptions{{3, 3}, {2, 2}, {1, 1}, true}});
  return v;
}

TEST(CudnnPooling, MatchesCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const PoolCase& c : cases()) {
      Tensor x = random_tensor(c.input, dtype, seed++);
      expect_pool_matches(PoolKind::Max, x, c.o, seed++);
      expect_pool_matches(PoolKind::Avg, x, c.o, seed++);
    }
  }
}

TEST(CudnnPooling, NonContiguousInput) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor base = random_tensor({2, 9, 10, 3}, kFloat32, 50);
  Pool2dOptions o{{3, 3}, {2, 2}, {1, 1}, false};
  for (PoolKind kind : {PoolKind::Max, PoolKind::Avg}) {
    auto pool = [&](const Tensor& t) { return kind == PoolKind::Max ? max_pool2d(t, o) : avg_pool2d(t, o); };
    EXPECT_CUDA_CLOSE(pool(base.cuda().permute({0, 3, 1, 2})), pool(base.permute({0, 3, 1, 2})));
  }
}

TEST(CudnnPooling, MaxTiesGoToFirstMaximumLikeCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  // ReLU-like input: most windows are all zeros, so every element ties.
  Tensor x = relu(random_tensor({2, 3, 12, 12}, kFloat32, 60) - 1.0);
  for (const Pool2dOptions& o :
       {Pool2dOptions{{2, 2}, {0, 0}, {0, 0}, true}, Pool2dOptions{{3, 3}, {2, 2}, {1, 1}, true},
        Pool2dOptions{{3, 3}, {1, 1}, {0, 0}, true}}) {
    expect_pool_matches(PoolKind::Max, x, o, 61);
  }
}

TEST(CudnnPooling, MaxPropagatesNan) {
  ANVIL_SKIP_WITHOUT_GPU();
  std::vector<float> v(36, 1.0f);
  v[7] = std::numeric_limits<float>::quiet_NaN();
  v[20] = 5.0f;
  Tensor x = from_vector<float>(v, {1, 1, 6, 6});
  expect_pool_matches(PoolKind::Max, x, Pool2dOptions{{3, 3}, {1, 1}, {1, 1}, true}, 70);
}

// Output sizes cuDNN does not produce (ceil mode): the windows may run past
// the padded input; only the backend interface can ask for them.
TEST(CudnnPooling, CeilModeSizesThroughBackend) {
  ANVIL_SKIP_WITHOUT_GPU();
  Runtime& cpu = runtime_for(DeviceType::CPU);
  Runtime& gpu = runtime_for(DeviceType::CUDA);
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 3;
  p.stride[0] = p.stride[1] = 2;
  p.padding[0] = p.padding[1] = 1;
  for (bool include_pad : {true, false}) {
    p.count_include_pad = include_pad;
    for (PoolKind kind : {PoolKind::Max, PoolKind::Avg}) {
      // H = W = 8: floor mode gives 4, ceil mode 5 (last window starts at 7 < 8 + 1).
      Tensor x = random_tensor({2, 3, 8, 8}, kFloat32, 80), xg = x.cuda();
      Tensor want = zeros({2, 3, 5, 5}), got = zeros({2, 3, 5, 5}).cuda();
      kernel_for<kernel::Pool2d>(cpu.type())(kind, want.view_of(), x.view_of(), p);
      kernel_for<kernel::Pool2d>(gpu.type())(kind, got.view_of(), xg.view_of(), p);
      EXPECT_CUDA_CLOSE(got, want) << "forward, include_pad " << include_pad;
      Tensor gy = random_tensor({2, 3, 5, 5}, kFloat32, 81), gyg = gy.cuda();
      Tensor want_gx = zeros({2, 3, 8, 8}), got_gx = zeros({2, 3, 8, 8}).cuda();
      kernel_for<kernel::Pool2dBackward>(cpu.type())(kind, want_gx.view_of(), gy.view_of(), x.view_of(), want.view_of(),
                                                     p);
      kernel_for<kernel::Pool2dBackward>(gpu.type())(kind, got_gx.view_of(), gyg.view_of(), xg.view_of(), got.view_of(),
                                                     p);
      EXPECT_CUDA_CLOSE(got_gx, want_gx) << "backward, include_pad " << include_pad;
    }
  }
}

}  // namespace
}  // namespace anvil
