// conv2d on CUDA (cuDNN; on the emulated GPU, im2col on the GEMM ladder)
// against the CPU backend: forward with bias and the gradients of input,
// weight and bias, over strides, padding, dilation, groups, odd sizes,
// non-contiguous inputs and every floating dtype. The im2col path is also
// checked directly, so a real GPU runs it too (on cuBLAS).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/runtime.h"
#include "kernels/cuda/conv2d_im2col.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;
using test::shape_text;
using test::Tolerance;

struct ConvCase {
  Shape input;  // [N, C, H, W]
  int64_t cout, kh, kw;
  Conv2dOptions o;
  bool bias = true;
};

// Sums of `terms` products in a different order on each side.
Tolerance conv_tolerance(DType dtype, int64_t terms) {
  Tolerance t = test::tolerance_for(dtype);
  t.atol *= std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1)));
  return t;
}

void expect_conv_matches(const ConvCase& c, DType dtype, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "input " << shape_text(c.input) << ", cout " << c.cout << ", kernel " << c.kh
                                    << "x" << c.kw << ", stride " << c.o.stride[0] << "," << c.o.stride[1]
                                    << ", padding " << c.o.padding[0] << "," << c.o.padding[1] << ", dilation "
                                    << c.o.dilation[0] << "," << c.o.dilation[1] << ", groups " << c.o.groups << ", "
                                    << dtype_name(dtype));
  const int64_t cin_g = c.input[1] / c.o.groups;
  Tensor x = random_tensor(c.input, dtype, seed);
  Tensor w = random_tensor({c.cout, cin_g, c.kh, c.kw}, dtype, seed + 1);
  Tensor b = c.bias ? random_tensor({c.cout}, dtype, seed + 2) : Tensor();
  Tensor y_cpu = conv2d(x, w, b, c.o);
  Tensor g = random_tensor(y_cpu.shape(), dtype, seed + 3);
  auto run = [&](Device d) {
    Tensor xd = x.to(d).detach().requires_grad_(), wd = w.to(d).detach().requires_grad_();
    Tensor bd = c.bias ? b.to(d).detach().requires_grad_() : Tensor();
    Tensor y = conv2d(xd, wd, bd, c.o);
    sum(y * g.to(d)).backward();
    return std::vector<Tensor>{y, xd.grad(), wd.grad(), c.bias ? bd.grad() : Tensor()};
  };
  const std::vector<Tensor> want = run(Device::cpu()), got = run(Device::cuda(0));
  const int64_t out_plane = y_cpu.size(2) * y_cpu.size(3);
  EXPECT_CUDA_CLOSE(got[0], want[0], conv_tolerance(dtype, cin_g * c.kh * c.kw)) << "output";
  EXPECT_CUDA_CLOSE(got[1], want[1], conv_tolerance(dtype, c.cout / c.o.groups * c.kh * c.kw)) << "grad input";
  EXPECT_CUDA_CLOSE(got[2], want[2], conv_tolerance(dtype, c.input[0] * out_plane)) << "grad weight";
  if (c.bias) {
    EXPECT_CUDA_CLOSE(got[3], want[3], conv_tolerance(dtype, c.input[0] * out_plane)) << "grad bias";
  }
}

std::vector<ConvCase> cases() {
  std::vector<ConvCase> v;
  v.push_back({{2, 3, 9, 9}, 4, 3, 3, {}});
  v.push_back({{1, 1, 1, 1}, 1, 1, 1, {}});
  v.push_back({{3, 5, 13, 7}, 6, 3, 2, Conv2dOptions{{2, 1}, {1, 0}, {1, 1}, 1}, false});
  v.push_back({{2, 4, 17, 17}, 8, 3, 3, Conv2dOptions{{1, 1}, {2, 2}, {2, 2}, 1}});  // dilation
  v.push_back({{2, 6, 11, 12}, 9, 3, 3, Conv2dOptions{{2, 2}, {1, 1}, {1, 1}, 3}});  // groups
  v.push_back({{2, 8, 10, 10}, 8, 3, 3, Conv2dOptions{{1, 1}, {1, 1}, {1, 1}, 8}});  // depthwise
  v.push_back({{4, 16, 7, 7}, 32, 1, 1, {}});  // pointwise
  v.push_back({{2, 3, 32, 32}, 16, 7, 7, Conv2dOptions{{2, 2}, {3, 3}, {1, 1}, 1}});  // stem-like
  v.push_back({{1, 4, 15, 9}, 6, 5, 3, Conv2dOptions{{3, 2}, {2, 1}, {2, 3}, 2}});  // everything at once
  return v;
}

TEST(CudnnConv2d, MatchesCpuFloat32) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (const ConvCase& c : cases()) expect_conv_matches(c, kFloat32, seed += 10);
}

TEST(CudnnConv2d, MatchesCpuOtherDtypes) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  for (DType dtype : {kFloat64, kFloat16, kBFloat16})
    for (const ConvCase& c : cases()) expect_conv_matches(c, dtype, seed += 10);
}

TEST(CudnnConv2d, NonContiguousInputAndWeight) {
  ANVIL_SKIP_WITHOUT_GPU();
  // NHWC storage seen as NCHW, and a weight stored [Cout, kH, kW, Cin].
  Tensor x_nhwc = random_tensor({2, 10, 11, 6}, kFloat32, 77);
  Tensor w_khwc = random_tensor({5, 3, 3, 6}, kFloat32, 78);
  Tensor b = random_tensor({5}, kFloat32, 79);
  Conv2dOptions o{{1, 2}, {1, 1}, {1, 1}, 1};
  Tensor want = conv2d(x_nhwc.permute({0, 3, 1, 2}), w_khwc.permute({0, 3, 1, 2}), b, o);
  Tensor got = conv2d(x_nhwc.cuda().permute({0, 3, 1, 2}), w_khwc.cuda().permute({0, 3, 1, 2}), b.cuda(), o);
  EXPECT_CUDA_CLOSE(got, want, conv_tolerance(kFloat32, 54));
}

TEST(CudnnConv2d, BackendWritesStridedOutputs) {
  ANVIL_SKIP_WITHOUT_GPU();
  // The backend may be handed a non-contiguous output: a channel slice.
  Runtime& cpu = runtime_for(DeviceType::CPU);
  Runtime& gpu = runtime_for(DeviceType::CUDA);
  Tensor x = random_tensor({2, 3, 8, 8}, kFloat32, 90), w = random_tensor({4, 3, 3, 3}, kFloat32, 91);
  Tensor out_base = random_tensor({2, 6, 6, 6}, kFloat32, 92);
  Conv2dParams p;
  Tensor want_base = out_base.clone(), got_base = out_base.cuda();
  Tensor want = want_base.narrow(1, 1, 4), got = got_base.narrow(1, 1, 4);
  Tensor xg = x.cuda(), wg = w.cuda();
  kernel_for<kernel::Conv2d>(cpu.type())(want.view_of(), x.view_of(), w.view_of(), nullptr, p);
  kernel_for<kernel::Conv2d>(gpu.type())(got.view_of(), xg.view_of(), wg.view_of(), nullptr, p);
  EXPECT_CUDA_CLOSE(got_base, want_base, conv_tolerance(kFloat32, 27));
}

TEST(CudaConv2dIm2col, MatchesCpuWithStridedOutputsAndGroups) {
  ANVIL_SKIP_WITHOUT_GPU();
  // The hand-written path called directly (on a real GPU conv2d takes cuDNN).
  auto& gpu = static_cast<cuda::CudaRuntime&>(runtime_for(DeviceType::CUDA));
  Runtime& cpu = runtime_for(DeviceType::CPU);
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(shape_text(c.input));
    Conv2dParams p;
    for (int i = 0; i < 2; ++i) {
      p.stride[i] = c.o.stride[i];
      p.padding[i] = c.o.padding[i];
      p.dilation[i] = c.o.dilation[i];
    }
    p.groups = c.o.groups;
    const Tensor x = random_tensor(c.input, kFloat32, 5),
                 w = random_tensor({c.cout, c.input[1] / c.o.groups, c.kh, c.kw}, kFloat32, 6);
    const Tensor b = random_tensor({c.cout}, kFloat32, 7);
    const Tensor y_cpu = conv2d(x, w, b, c.o);
    // Outputs and gradients written into channel slices of larger tensors.
    Shape wide = y_cpu.shape();
    wide[1] += 2;
    const Tensor out_base = random_tensor(wide, kFloat32, 8),
                 gx_base = random_tensor({c.input[0], c.input[1] + 1, c.input[2], c.input[3]}, kFloat32, 9);
    Tensor want = out_base.clone(), got = out_base.cuda();
    const Tensor xg = x.cuda(), wg = w.cuda(), bg = b.cuda();
    const View b_cpu = b.view_of(), b_gpu = bg.view_of();
    kernel_for<kernel::Conv2d>(cpu.type())(want.narrow(1, 1, c.cout).view_of(), x.view_of(), w.view_of(), &b_cpu, p);
    cuda::conv2d_im2col(gpu, got.narrow(1, 1, c.cout).view_of(), xg.view_of(), wg.view_of(), &b_gpu, p);
    EXPECT_CUDA_CLOSE(got, want, conv_tolerance(kFloat32, c.input[1] / c.o.groups * c.kh * c.kw)) << "output";
    const Tensor dy = random_tensor(y_cpu.shape(), kFloat32, 10), dyg = dy.cuda();
    Tensor dx_want = gx_base.clone(), dx_got = gx_base.cuda();
    kernel_for<kernel::Conv2dBackwardInput>(cpu.type())(dx_want.narrow(1, 0, c.input[1]).view_of(), dy.view_of(),
                                                        w.view_of(), p);
    cuda::conv2d_backward_input_im2col(gpu, dx_got.narrow(1, 0, c.input[1]).view_of(), dyg.view_of(), wg.view_of(), p);
    EXPECT_CUDA_CLOSE(dx_got, dx_want, conv_tolerance(kFloat32, c.cout / c.o.groups * c.kh * c.kw)) << "grad input";
    Tensor dw_want = zeros(w.shape()), dw_got = full(w.shape(), 7.0).cuda();
    kernel_for<kernel::Conv2dBackwardWeight>(cpu.type())(dw_want.view_of(), dy.view_of(), x.view_of(), p);
    cuda::conv2d_backward_weight_im2col(gpu, dw_got.view_of(), dyg.view_of(), xg.view_of(), p);
    EXPECT_CUDA_CLOSE(dw_got, dw_want, conv_tolerance(kFloat32, c.input[0] * y_cpu.size(2) * y_cpu.size(3)))
        << "grad weight";
  }
}

}  // namespace
}  // namespace anvil
