// autograd::queue_callback: work queued during backward runs once every
// gradient is accumulated (what DDP waits on), in order, and only inside a
// backward pass.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"

namespace anvil {
namespace {

TEST(AutogradCallbacks, RunAfterEveryLeafGradientWasAccumulated) {
  Tensor a = randn({3}, kFloat64).requires_grad_();
  Tensor b = randn({3}, kFloat64).requires_grad_();
  std::vector<std::string> events;
  bool both_grads_at_callback = false;
  // a's gradient is accumulated before b's (b is used first, so its node runs last);
  // the callback is queued at the first accumulation and must still see both.
  a.register_post_accumulate_grad_hook([&](const Tensor&) {
    events.push_back("a");
    autograd::queue_callback([&] {
      events.push_back("callback");
      both_grads_at_callback = a.grad().defined() && b.grad().defined();
    });
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { events.push_back("b"); });
  Tensor loss = (b * 2.0 + a * a).sum();
  loss.backward();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events.back(), "callback");
  EXPECT_TRUE(both_grads_at_callback);
}

TEST(AutogradCallbacks, RunInOrderAndMayQueueMore) {
  Tensor x = randn({2}, kFloat64).requires_grad_();
  std::vector<int> order;
  x.register_post_accumulate_grad_hook([&](const Tensor&) {
    autograd::queue_callback([&] {
      order.push_back(1);
      autograd::queue_callback([&] { order.push_back(3); });
    });
    autograd::queue_callback([&] { order.push_back(2); });
  });
  (x * 3.0).sum().backward();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  // Queued callbacks belong to one pass: a second backward runs its own once.
  order.clear();
  (x * 3.0).sum().backward();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(AutogradCallbacks, OutsideBackwardIsAnError) {
  EXPECT_FALSE(autograd::in_backward_pass());
  EXPECT_THROW(autograd::queue_callback([] {}), Error);
}

TEST(AutogradCallbacks, CallbackErrorPropagatesOutOfBackward) {
  Tensor x = randn({2}, kFloat64).requires_grad_();
  x.register_post_accumulate_grad_hook([](const Tensor&) {
    EXPECT_TRUE(autograd::in_backward_pass());
    autograd::queue_callback([] { fail("from the callback"); });
  });
  EXPECT_THROW((x * 2.0).sum().backward(), Error);
  EXPECT_FALSE(autograd::in_backward_pass());
}

TEST(AutogradCallbacks, GradRunsCallbacksToo) {
  Tensor x = randn({2}, kFloat64).requires_grad_();
  Tensor y = x * x;
  int ran = 0;
  y.register_hook([&](const Tensor&) {
    autograd::queue_callback([&] { ++ran; });
    return Tensor();
  });
  autograd::grad({y.sum()}, {x});
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace anvil
