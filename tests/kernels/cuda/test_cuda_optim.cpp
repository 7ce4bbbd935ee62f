// The fused multi-tensor AdamW/Adam and SGD updates on CUDA against the CPU
// backend: many tensors of odd sizes (tails of the 16-byte vector path,
// tensors larger than one chunk, more tensors and blocks than one launch
// holds), misaligned views, several steps, every hyperparameter variant.
#include <gtest/gtest.h>

#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/optim_kernels.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::random_tensor;

std::vector<Tensor> make_list(const std::vector<int64_t>& sizes, DType dt, uint64_t seed, double scale = 1.0) {
  std::vector<Tensor> v;
  for (size_t i = 0; i < sizes.size(); ++i) v.push_back(random_tensor({sizes[i]}, dt, seed + i) * scale);
  return v;
}
std::vector<Tensor> to_cuda(const std::vector<Tensor>& v) {
  std::vector<Tensor> r;
  for (const auto& t : v) r.push_back(t.cuda());
  return r;
}
std::vector<View> views(const std::vector<Tensor>& v) {
  std::vector<View> r;
  for (const auto& t : v) r.push_back(t.view_of());
  return r;
}

// Sizes: 1, 3, 5 (scalar tails), 4096+3, over one 65536 chunk, and enough
// tensors (40 > 32 per launch) and, with `many_chunks`, chunks (> 320 per
// launch) to need several launches. The 21M-element tensor takes minutes on
// the emulated GPU, so there only the first variant of each test has it.
std::vector<int64_t> sizes(bool many_chunks) {
  std::vector<int64_t> s = {1, 3, 5, 4099, 65536 * 2 + 17, 1000};
  for (int i = 0; i < 34; ++i) s.push_back(7 * i + 1);
  if (many_chunks || !test::emulated_gpu()) s.push_back(65536 * 330 + 5);  // more chunks than one launch
  return s;
}

// The absolute part is a few ulps of the operands (N(0,1) values, up to ~5),
// not of the result: where an update cancels a parameter to near zero, the
// GPU's fused multiply-adds (one rounding) and the CPU's separate multiply
// and add (two) leave that much behind. Seen on an H100: 9.5e-7 at a
// float32 result of 0.005 after three SGD steps with momentum.
test::Tolerance tol(DType d) { return d == kFloat32 ? test::Tolerance{2e-6, 2e-6} : test::Tolerance{1e-13, 4e-15}; }

TEST(CudaOptim, AdamWAndAdamMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64}) {
    for (bool decoupled : {true, false}) {
      const auto sz = sizes(dt == kFloat32 && decoupled);
      auto pc = make_list(sz, dt, 1), gc = make_list(sz, dt, 100), mc = make_list(sz, dt, 200, 0.1),
           vc = make_list(sz, dt, 300, 0.0);
      for (auto& v : vc) v = v.abs() + 0.01;
      auto pg = to_cuda(pc), gg = to_cuda(gc), mg = to_cuda(mc), vg = to_cuda(vc);
      for (int64_t step = 1; step <= 3; ++step) {
        AdamWParams p;
        p.lr = 1e-2;
        p.weight_decay = 0.1;
        p.step = step;
        p.decoupled = decoupled;
        kernel_for<kernel::AdamW>(DeviceType::CPU)(views(pc), views(gc), views(mc), views(vc), p);
        kernel_for<kernel::AdamW>(DeviceType::CUDA)(views(pg), views(gg), views(mg), views(vg), p);
      }
      for (size_t k = 0; k < sz.size(); ++k) {
        EXPECT_TRUE(test::all_close(pg[k], pc[k], tol(dt))) << "param " << k << " size " << sz[k];
        EXPECT_TRUE(test::all_close(mg[k], mc[k], tol(dt))) << "exp_avg " << k;
        EXPECT_TRUE(test::all_close(vg[k], vc[k], tol(dt))) << "exp_avg_sq " << k;
      }
    }
  }
}

TEST(CudaOptim, SgdVariantsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  struct Case {
    double momentum, dampening, wd;
    bool nesterov;
  };
  for (DType dt : {kFloat32, kFloat64}) {
    for (Case c :
         {Case{0, 0, 0, false}, Case{0.9, 0, 1e-2, false}, Case{0.9, 0.1, 0, false}, Case{0.9, 0, 1e-3, true}}) {
      const auto sz = sizes(dt == kFloat32 && c.nesterov);
      auto pc = make_list(sz, dt, 1), gc = make_list(sz, dt, 100), bc = make_list(sz, dt, 200);
      auto pg = to_cuda(pc), gg = to_cuda(gc), bg = to_cuda(bc);
      for (int step = 0; step < 3; ++step) {
        SGDParams p;
        p.lr = 0.05;
        p.momentum = c.momentum;
        p.dampening = c.dampening;
        p.weight_decay = c.wd;
        p.nesterov = c.nesterov;
        p.first_step = step == 0;
        const std::vector<View> mom_c = c.momentum != 0 ? views(bc) : std::vector<View>{};
        const std::vector<View> mom_g = c.momentum != 0 ? views(bg) : std::vector<View>{};
        kernel_for<kernel::SGD>(DeviceType::CPU)(views(pc), views(gc), mom_c, p);
        kernel_for<kernel::SGD>(DeviceType::CUDA)(views(pg), views(gg), mom_g, p);
      }
      for (size_t k = 0; k < sz.size(); ++k) {
        EXPECT_TRUE(test::all_close(pg[k], pc[k], tol(dt))) << "param " << k << " momentum " << c.momentum;
        if (c.momentum != 0) {
          EXPECT_TRUE(test::all_close(bg[k], bc[k], tol(dt))) << "buffer " << k;
        }
      }
    }
  }
}

TEST(CudaOptim, MisalignedViewsAndEmptyLists) {
  ANVIL_SKIP_WITHOUT_GPU();
  // Views starting one element in: not 16-byte aligned, the scalar path.
  const Tensor p = random_tensor({1001}, kFloat32, 1), g = random_tensor({1001}, kFloat32, 2);
  Tensor pc = p.clone(), pg = p.cuda();
  const Tensor gc = g.clone(), gg = g.cuda();
  Tensor pcs = pc.slice(0, 1, 1001), pgs = pg.slice(0, 1, 1001);
  const Tensor gcs = gc.slice(0, 1, 1001), ggs = gg.slice(0, 1, 1001);
  SGDParams sp;
  kernel_for<kernel::SGD>(DeviceType::CPU)(std::vector<View>{pcs.view_of()}, std::vector<View>{gcs.view_of()}, {}, sp);
  kernel_for<kernel::SGD>(DeviceType::CUDA)(std::vector<View>{pgs.view_of()}, std::vector<View>{ggs.view_of()}, {}, sp);
  EXPECT_CUDA_CLOSE(pg, pc, tol(kFloat32));
  EXPECT_NO_THROW(kernel_for<kernel::AdamW>(DeviceType::CUDA)({}, {}, {}, {}, AdamWParams{}));
  // A float16 parameter is refused, as on the CPU.
  const Tensor h = zeros({4}, kFloat16).cuda();
  EXPECT_THROW(
      kernel_for<kernel::SGD>(DeviceType::CUDA)(std::vector<View>{h.view_of()}, std::vector<View>{h.view_of()}, {}, sp),
      Error);
}

}  // namespace
}  // namespace anvil
