#include "distributed/comm_hooks/comm_hook.h"

#include "core/autograd/grad_mode.h"
#include "core/base/error.h"

namespace anvil::distributed {

Tensor GradBucket::gradient(size_t i) const {
  ANVIL_CHECK(i < parameters_.size(), "GradBucket::gradient: index ", i, " out of range for a bucket of ",
              parameters_.size(), " parameters");
  const Tensor& p = parameters_[i];
  return buffer_.narrow(0, offsets_[i], p.numel()).view(p.shape());
}

std::vector<Tensor> GradBucket::gradients() const {
  std::vector<Tensor> out;
  for (size_t i = 0; i < parameters_.size(); ++i) out.push_back(gradient(i));
  return out;
}

namespace {

class WorkThenFuture : public BucketFuture {
 public:
  WorkThenFuture(WorkHandle work, std::function<Tensor()> then) : work_(std::move(work)), then_(std::move(then)) {}
  Tensor wait() override {
    if (work_) work_->wait();
    NoGradGuard no_grad;  // continuations run inside the engine's end-of-backward callback
    return then_();
  }

 private:
  WorkHandle work_;
  std::function<Tensor()> then_;
};

class ReadyFuture : public BucketFuture {
 public:
  explicit ReadyFuture(Tensor result) : result_(std::move(result)) {}
  Tensor wait() override { return result_; }

 private:
  Tensor result_;
};

}  // namespace

BucketFutureHandle BucketFuture::after(WorkHandle work, std::function<Tensor()> then) {
  return std::make_shared<WorkThenFuture>(std::move(work), std::move(then));
}

BucketFutureHandle BucketFuture::ready(Tensor result) { return std::make_shared<ReadyFuture>(std::move(result)); }

BucketFutureHandle allreduce_hook(GradBucket& bucket) {
  Tensor flat = bucket.buffer();
  WorkHandle work = bucket.process_group().all_reduce(flat, ReduceOp::Sum);
  const Scalar world(static_cast<int64_t>(bucket.world_size()));
  return BucketFuture::after(std::move(work), [flat, world]() mutable { return flat.div_(world); });
}

}  // namespace anvil::distributed
