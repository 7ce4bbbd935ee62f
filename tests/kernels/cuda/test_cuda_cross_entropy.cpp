// Fused cross entropy on CUDA against the CPU backend: losses, logsumexp and
// gradients, with ignore_index and label smoothing, odd class counts, every
// floating dtype; out-of-range targets raise an anvil::Error.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/softmax_loss_kernels.h"
#include "kernels/runtime.h"
#include "kernels/cuda/index_errors.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;
using test::random_tensor;

Tensor random_targets(int64_t n, int64_t classes, uint64_t seed, int64_t ignore_index, double ignore_fraction) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> cls(0, classes - 1);
  std::bernoulli_distribution ignore(ignore_fraction);
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = ignore(gen) ? ignore_index : cls(gen);
  return from_vector<int64_t>(t, {n});
}

test::Tolerance tol(DType d) {
  if (d == kFloat16) return {4e-3, 2e-3};
  if (d == kBFloat16) return {2e-2, 1e-2};
  if (d == kFloat32) return {2e-5, 2e-6};
  return {1e-9, 1e-11};
}

TEST(CudaCrossEntropy, PerRowLossesAndLogsumexpThroughBackend) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (int64_t classes : {1, 3, 10, 1000, 4097, 50257}) {
      for (double ls : {0.0, 0.1}) {
        const int64_t n = classes > 4096 ? 5 : 33;
        const Tensor logits = random_tensor({n, classes}, dt, classes) * 4.0;
        const Tensor targets = random_targets(n, classes, classes + 1, -100, 0.2);
        const CrossEntropyParams p{-100, ls};
        Tensor loss_c = empty({n}, logits.options()), lse_c = empty({n}, logits.options().dtype(kFloat32));
        kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(loss_c.view_of(), lse_c.view_of(), logits.view_of(),
                                                          targets.view_of(), p);
        const Tensor lg = logits.cuda(), tg = targets.cuda();
        Tensor loss_g = empty({n}, lg.options()), lse_g = empty({n}, lg.options().dtype(kFloat32));
        kernel_for<kernel::CrossEntropy>(DeviceType::CUDA)(loss_g.view_of(), lse_g.view_of(), lg.view_of(),
                                                           tg.view_of(), p);
        EXPECT_TRUE(all_close(loss_g, loss_c, tol(dt))) << dt << " C=" << classes << " ls=" << ls;
        EXPECT_TRUE(all_close(lse_g, lse_c, {2e-5, 2e-5})) << dt << " C=" << classes << " ls=" << ls;
      }
    }
  }
}

TEST(CudaCrossEntropy, GradientsMatchCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    for (int64_t classes : {3, 1000, 4097}) {
      for (double ls : {0.0, 0.2}) {
        const int64_t n = 17;
        const Tensor logits = random_tensor({n, classes}, dt, classes + 7);
        const Tensor targets = random_targets(n, classes, classes + 3, 5 % classes, 0.1);  // some rows ignored
        CrossEntropyOptions o;
        o.ignore_index = 5 % classes;
        o.label_smoothing = ls;
        Tensor xc = logits.clone().requires_grad_(), xg = logits.cuda().requires_grad_();
        const Tensor lc = cross_entropy(xc, targets, o), lg = cross_entropy(xg, targets.cuda(), o);
        EXPECT_TRUE(all_close(lg, lc, tol(dt))) << dt << " C=" << classes;
        lc.backward();
        lg.backward();
        EXPECT_TRUE(all_close(xg.grad(), xc.grad(), tol(dt))) << dt << " C=" << classes << " ls=" << ls;
      }
    }
  }
}

TEST(CudaCrossEntropy, NonContiguousLogitsInt32TargetsAndEmpty) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor base = random_tensor({10, 8}, kFloat32, 9);
  const Tensor logits = base.transpose(0, 1);  // [8, 10], strided
  const Tensor targets = random_targets(8, 10, 2, -100, 0.0);
  EXPECT_CUDA_CLOSE(cross_entropy(base.cuda().transpose(0, 1), targets.cuda()), cross_entropy(logits, targets),
                    tol(kFloat32));
  const CrossEntropyParams p;
  const Tensor t32 = targets.to(kInt32);
  Tensor loss_c = empty({8}), lse_c = empty({8}), loss_g = empty({8}).cuda(), lse_g = empty({8}).cuda();
  kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(loss_c.view_of(), lse_c.view_of(), logits.view_of(), t32.view_of(),
                                                    p);
  const Tensor lg = logits.cuda(), tg = t32.cuda();
  kernel_for<kernel::CrossEntropy>(DeviceType::CUDA)(loss_g.view_of(), lse_g.view_of(), lg.view_of(), tg.view_of(), p);
  EXPECT_CUDA_CLOSE(loss_g, loss_c, tol(kFloat32));
  const Tensor none = empty({0, 5}).cuda();
  EXPECT_NO_THROW(cross_entropy(none, empty({0}, kInt64).cuda(), {Reduction::Sum}));
}

TEST(CudaCrossEntropy, OutOfRangeTargetRaises) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor logits = random_tensor({4, 3}, kFloat32, 1).cuda();
  const Tensor targets = from_vector<int64_t>({0, 1, 7, 2}, {4}).cuda();
  EXPECT_THROW(
      {
        Tensor l = cross_entropy(logits, targets, {Reduction::None});
        l.cpu();  // a synchronising point
        cuda::raise_pending_index_error(0);  // what synchronize() does
      },
      Error);
  // Raising clears the record: the next call works.
  const Tensor ok = from_vector<int64_t>({0, 1, 2, 2}, {4}).cuda();
  EXPECT_NO_THROW(cross_entropy(logits, ok).cpu());
}

}  // namespace
}  // namespace anvil
