#pragma once
// Helpers for the emulator's checker tests (test_checkers.cu,
// test_tensor_core_checks.cu): run a kernel broken on purpose, then expect
// the launch to fail with a finding of the right checker whose text names
// the kernel, the thread and the source line; or expect a clean run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/emulator/emulator.h"

namespace anvil::cuda::checker_test {

using emulator::Checker;
using emulator::Finding;

template <typename T> inline T* device_alloc(size_t n) {
  void* p = nullptr;
  ANVIL_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}

template <typename T> inline void upload(T* dst, const std::vector<T>& src) {
  ANVIL_CUDA_CHECK(cudaMemcpy(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// Synchronizes, expecting the launch to have failed, and returns what the
// checkers found.
inline std::vector<Finding> findings_after_failed_sync() {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  cudaGetLastError();
  return emulator::take_findings();
}

inline void expect_found(const std::vector<Finding>& found, Checker checker, const std::vector<std::string>& words) {
  ASSERT_FALSE(found.empty()) << "no finding";
  bool matched = false;
  for (const Finding& f : found) {
    if (f.checker != checker) continue;
    bool all = true;
    for (const std::string& w : words) all &= f.text.find(w) != std::string::npos;
    matched |= all;
  }
  std::string texts;
  for (const Finding& f : found) texts += std::string(emulator::checker_name(f.checker)) + ": " + f.text + "\n";
  EXPECT_TRUE(matched) << "want a " << emulator::checker_name(checker) << " finding mentioning every one of the "
                       << words.size() << " expected words; got:\n"
                       << texts;
}

inline void expect_clean() {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<Finding> found = emulator::take_findings();
  EXPECT_TRUE(found.empty()) << found.size()
                             << " unexpected finding(s), first: " << (found.empty() ? "" : found[0].text);
}

}  // namespace anvil::cuda::checker_test
