#include "distributed/comm_hooks/compress_hooks.h"

#include "core/autograd/grad_mode.h"

namespace anvil::distributed {

namespace {

BucketFutureHandle compress_to(GradBucket& bucket, DType wire) {
  NoGradGuard no_grad;
  Tensor flat = bucket.buffer();
  Tensor compressed = flat.to(wire).div_(Scalar(static_cast<int64_t>(bucket.world_size())));
  WorkHandle work = bucket.process_group().all_reduce(compressed, ReduceOp::Sum);
  return BucketFuture::after(std::move(work), [flat, compressed]() mutable { return flat.copy_(compressed); });
}

}  // namespace

BucketFutureHandle fp16_compress_hook(GradBucket& bucket) { return compress_to(bucket, kFloat16); }
BucketFutureHandle bf16_compress_hook(GradBucket& bucket) { return compress_to(bucket, kBFloat16); }

}  // namespace anvil::distributed
