#pragma once
// Runs a test body on N ranks inside this process: one thread per rank, each
// with its own GlooProcessGroup (real Gloo over loopback TCP) meeting through
// a FileStore in a fresh temporary file. Lighter than N processes, and the
// collectives and send/recv are exactly the ones a multi-process job runs.
// run_world_ranks also gives each rank a World on that store, for new_group
// and DeviceMesh.
// A rank that fails makes its peers fail too (the group timeout bounds any
// wait), and the first error is rethrown on the calling thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "distributed/process_group/gloo/gloo_process_group.h"
#include "distributed/process_group/subgroup.h"
#include "distributed/store/file_store.h"

namespace anvil::distributed::testing {

// The same with a World per rank too (new_group, DeviceMesh): its groups
// meet through the same store ("gloo" backend, the same timeout).
inline void run_world_ranks(int n, const std::function<void(World&, std::shared_ptr<ProcessGroup>)>& body,
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  static std::atomic<int> job{0};
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("anvil_rank_threads_" + std::to_string(::getpid()) + "_" + std::to_string(job++)))
                               .string();
  std::filesystem::remove(path);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        auto store = std::make_shared<FileStore>(path, timeout);
        ProcessGroupOptions options;
        options.timeout = timeout;
        auto group = std::make_shared<GlooProcessGroup>(store, r, n, options);
        World world(store, r, n, {.backend = "gloo", .group = options});
        body(world, group);
        group->barrier()->wait();  // no rank tears down its connections while a peer still uses them
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  std::filesystem::remove(path);
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

inline void run_ranks(int n, const std::function<void(std::shared_ptr<ProcessGroup>)>& body,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  run_world_ranks(
      n, [&](World&, std::shared_ptr<ProcessGroup> group) { body(std::move(group)); }, timeout);
}

// Random float64 inputs of `numel` elements, one per rank, made on the calling
// thread (rank threads do not share the global generator).
inline std::vector<Tensor> random_rank_inputs(int n, int64_t numel) {
  std::vector<Tensor> xs;
  for (int r = 0; r < n; ++r) xs.push_back(randn({numel}, kFloat64));
  return xs;
}

}  // namespace anvil::distributed::testing
