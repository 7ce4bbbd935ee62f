#include "distributed/comm_hooks/compress_hooks.h"

#include "core/autograd/grad_mode.h"

namespace anvil::distributed {

namespace {

BucketFutureHandle compress_to(GradBucket& bucket, DType wire) {
  NoGradGuard no_grad;
  Tensor flat = bucket.buffer();
  // Divided before the cast: one rounding instead of two, and 16-bit
  // arithmetic on the CPU is software (slower than a float pass).
  Tensor compressed = flat.div(Scalar(static_cast<int64_t>(bucket.world_size()))).to(wire);
  WorkHandle work = bucket.process_group().all_reduce(compressed, ReduceOp::Sum);
  return BucketFuture::after(std::move(work), [flat, compressed]() mutable { return flat.copy_(compressed); });
}

}  // namespace

BucketFutureHandle fp16_compress_hook(GradBucket& bucket) { return compress_to(bucket, kFloat16); }
BucketFutureHandle bf16_compress_hook(GradBucket& bucket) { return compress_to(bucket, kBFloat16); }

}  // namespace anvil::distributed
