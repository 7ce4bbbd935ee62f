// The engine with backward passes on several threads at once, as DDP's
// gradient hooks and DataParallel's replicas run it: leaves shared between
// graphs with tensor and post-accumulate hooks firing from every thread, and
// one graph walked by several threads. ./test.sh --tsan runs these under
// ThreadSanitizer, which is what catches a missing lock here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::max_abs_diff;

constexpr int kThreads = 4;

void on_threads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
}

// A leaf's hooks and its accumulation run one thread at a time, so a hook
// may keep state without a lock of its own (DDP's reducer does) and each
// post-accumulate hook sees .grad() with exactly its own pass added.
TEST(AutogradThreads, LeafHooksFromSeveralThreadsRunOneAtATime) {
  const int iterations = 20;
  const int64_t n = 8;
  Tensor w = randn({n}).requires_grad_();
  int tensor_hook_calls = 0;  // plain ints on purpose: TSan reports any unordered access
  int post_hook_calls = 0;
  std::vector<float> sums_seen;
  w.register_hook([&](const Tensor& g) {
    ++tensor_hook_calls;
    return g * 2.0;
  });
  w.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    ++post_hook_calls;
    sums_seen.push_back(leaf.grad().sum().item<float>());
  });
  on_threads(kThreads, [&](int) {
    for (int i = 0; i < iterations; ++i) (w * 1.0).sum().backward();
  });
  const int passes = kThreads * iterations;
  EXPECT_EQ(tensor_hook_calls, passes);
  ASSERT_EQ(post_hook_calls, passes);
  // Each pass adds 2 per element (the hook doubled its gradient of ones).
  std::sort(sums_seen.begin(), sums_seen.end());
  for (int k = 0; k < passes; ++k) EXPECT_EQ(sums_seen[static_cast<size_t>(k)], 2.0f * n * (k + 1)) << k;
  EXPECT_EQ(w.grad().min().item<float>(), 2.0f * passes);
  EXPECT_EQ(w.grad().max().item<float>(), 2.0f * passes);
}

// Each thread's own non-leaf carries a hook; the graphs meet in two shared
// leaves. Every hook fires once per pass, on the thread that ran it.
TEST(AutogradThreads, NonLeafHooksOnEachThreadsGraph) {
  const int iterations = 10;
  Tensor a = randn({16}, kFloat64).requires_grad_();
  Tensor b = randn({16}, kFloat64).requires_grad_();
  std::vector<int> calls(kThreads, 0);  // each slot written by one thread only
  std::vector<std::thread::id> ran_on(kThreads);
  on_threads(kThreads, [&](int t) {
    for (int i = 0; i < iterations; ++i) {
      Tensor h = a * b;
      h.register_hook([&, t](const Tensor& g) {
        ++calls[static_cast<size_t>(t)];
        ran_on[static_cast<size_t>(t)] = std::this_thread::get_id();
        return g * 3.0;
      });
      h.sum().backward();
      EXPECT_EQ(ran_on[static_cast<size_t>(t)], std::this_thread::get_id());
    }
  });
  for (int c : calls) EXPECT_EQ(c, iterations);
  const double passes = kThreads * iterations;
  EXPECT_LT(max_abs_diff(a.grad(), b.detach() * (3.0 * passes)), 1e-9);
  EXPECT_LT(max_abs_diff(b.grad(), a.detach() * (3.0 * passes)), 1e-9);
}

// Several threads walk one retained graph at once: every pass runs every
// node (and the shared non-leaf's hook) and adds its whole gradient.
TEST(AutogradThreads, OneRetainedGraphWalkedBySeveralThreads) {
  const int iterations = 10;
  Tensor x = randn({32}, kFloat64).requires_grad_();
  Tensor h = x.sin();
  std::atomic<int> hook_calls{0};
  h.register_hook([&](const Tensor&) {
    ++hook_calls;
    return Tensor();
  });
  Tensor y = (h * h).sum();
  on_threads(kThreads, [&](int) {
    for (int i = 0; i < iterations; ++i) autograd::backward({y}, {}, {.retain_graph = true});
  });
  const double passes = kThreads * iterations;
  EXPECT_EQ(hook_calls.load(), kThreads * iterations);
  Tensor xd = x.detach();
  EXPECT_LT(max_abs_diff(x.grad(), xd.sin() * xd.cos() * (2.0 * passes)), 1e-9);
}

// Without retain_graph the first pass through a node frees what the node
// saved. A pass racing it through the same graph must either run each node
// before that or stop with the "second time" error: it may never call a
// backward function while another thread destroys it (it did: a use after
// free, which ThreadSanitizer reports as a race in FunctionNode::apply). The
// tensors are large so that each node's backward runs long enough for the
// passes, started together, to overlap.
TEST(AutogradThreads, OneGraphWithoutRetainGraphEitherRunsOrFailsCleanly) {
  for (int round = 0; round < 10; ++round) {
    Tensor x = randn({1 << 16}, kFloat64).requires_grad_();
    Tensor y = (x.sin() * x.cos()).exp().sum();
    std::atomic<int> ran{0}, refused{0}, waiting{kThreads};
    std::vector<std::string> errors(kThreads);
    on_threads(kThreads, [&](int t) {
      --waiting;
      while (waiting.load() > 0) std::this_thread::yield();  // start together
      try {
        y.backward();
        ++ran;
      } catch (const Error& e) {
        errors[static_cast<size_t>(t)] = e.what();
        ++refused;
      }
    });
    // The pass that reaches each node first always completes.
    EXPECT_GE(ran.load(), 1);
    EXPECT_EQ(ran.load() + refused.load(), kThreads);
    for (const std::string& e : errors)
      if (!e.empty()) {
        EXPECT_NE(e.find("a second time"), std::string::npos) << e;
      }
  }
}

}  // namespace
}  // namespace anvil
