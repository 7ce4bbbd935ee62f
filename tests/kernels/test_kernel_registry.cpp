// The kernel registry: lookups, the error for a missing kernel, overrides,
// and the coverage table docs/kernel_coverage.md, which this test holds the
// build to: a kernel that disappears, or a CUDA kernel the table promises
// that this build lacks (CUDA falling back silently), fails here. Regenerate
// the table after adding a kernel with
//   ANVIL_WRITE_KERNEL_COVERAGE=1 build/bin/anvil_tests_kernels_cpu --gtest_filter='KernelCoverage.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/ops/table_kernels.h"

#ifndef ANVIL_KERNEL_COVERAGE_FILE
#error "tests/CMakeLists.txt defines ANVIL_KERNEL_COVERAGE_FILE (docs/kernel_coverage.md)"
#endif

namespace anvil {
namespace {

// An op no kernel file registers, declared here only.
struct NeverRegistered {
  static constexpr const char* name = "test_never_registered";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out);
};
ANVIL_DECLARE_KERNEL_OP(NeverRegistered);

int calls = 0;
void counting_rms_norm(const View&, const View&, const View&, const View*, double) { ++calls; }

TEST(KernelRegistry, EveryBuildHasTheCpuKernels) {
  EXPECT_NE(find_kernel<kernel::RmsNorm>(DeviceType::CPU), nullptr);
  EXPECT_NE(find_kernel<kernel::Binary>(DeviceType::CPU), nullptr);
}

TEST(KernelRegistry, AMissingKernelIsAnErrorNamingTheOpAndTheDevice) {
  EXPECT_EQ(find_kernel<NeverRegistered>(DeviceType::CPU), nullptr);
  try {
    kernel_for<NeverRegistered>(DeviceType::CUDA)(View{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("test_never_registered"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
  }
}

TEST(KernelRegistry, AnOverrideReplacesAKernelForItsScopeOnly) {
  auto* original = find_kernel<kernel::RmsNorm>(DeviceType::CPU);
  {
    kernel_registry::ScopedOverride<kernel::RmsNorm> swap(DeviceType::CPU, &counting_rms_norm);
    calls = 0;
    kernel_for<kernel::RmsNorm>(DeviceType::CPU)(View{}, View{}, View{}, nullptr, 1e-5);
    EXPECT_EQ(calls, 1);
    {
      kernel_registry::ScopedOverride<kernel::RmsNorm> none(DeviceType::CPU, nullptr);
      EXPECT_EQ(find_kernel<kernel::RmsNorm>(DeviceType::CPU), nullptr);
    }
    EXPECT_EQ(find_kernel<kernel::RmsNorm>(DeviceType::CPU), &counting_rms_norm);
  }
  EXPECT_EQ(find_kernel<kernel::RmsNorm>(DeviceType::CPU), original);
}

TEST(KernelRegistry, CoverageListsDeclaredOpsWithTheirKernels) {
  std::map<std::string, kernel_registry::OpCoverage> rows;
  for (const auto& r : kernel_registry::coverage()) rows[r.name] = r;
  ASSERT_TRUE(rows.count("test_never_registered"));
  EXPECT_FALSE(rows["test_never_registered"].has_kernel[0]);
  ASSERT_TRUE(rows.count("rms_norm"));
  EXPECT_TRUE(rows["rms_norm"].has_fallback);
  EXPECT_TRUE(rows["rms_norm"].has_kernel[static_cast<int>(DeviceType::CPU)]);
  ASSERT_TRUE(rows.count("sort"));
  EXPECT_FALSE(rows["sort"].has_fallback);
}

// --- the coverage table ---

const char* cell(bool has_kernel, bool has_fallback) { return has_kernel ? "kernel" : has_fallback ? "fallback" : "-"; }

std::string table_of_this_build() {
  std::ostringstream out;
  out << "# Kernel coverage\n\n"
      << "Which ops each backend has a kernel for (`kernel`), and which run their composed fallback there\n"
      << "(`fallback`: written in anvil ops in the op's core file) or do not run at all (`-`). Generated from the\n"
      << "kernel registry (kernels/kernel_registry.h) by tests/kernels/test_kernel_registry.cpp, which fails\n"
      << "when a build lacks a kernel listed here. Regenerate after adding a kernel:\n\n"
      << "    ANVIL_WRITE_KERNEL_COVERAGE=1 build/bin/anvil_tests_kernels_cpu --gtest_filter='KernelCoverage.*'\n\n"
      << "| op | fallback | cpu | cuda |\n| --- | --- | --- | --- |\n";
  for (const auto& r : kernel_registry::coverage()) {
    if (r.name.rfind("test_", 0) == 0) continue;  // ops declared by tests
    out << "| " << r.name << " | " << (r.has_fallback ? "composed" : "-") << " | "
        << cell(r.has_kernel[0], r.has_fallback) << " | " << cell(r.has_kernel[1], r.has_fallback) << " |\n";
  }
  return out.str();
}

struct Row {
  std::string fallback, cpu, cuda;
};

std::map<std::string, Row> parse(const std::string& text) {
  std::map<std::string, Row> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| op ", 0) == 0 || line.rfind("| ---", 0) == 0) continue;
    std::vector<std::string> cells;
    std::istringstream cols(line.substr(1));
    std::string c;
    while (std::getline(cols, c, '|')) {
      const auto b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
      if (b != std::string::npos) cells.push_back(c.substr(b, e - b + 1));
    }
    if (cells.size() == 4) rows[cells[0]] = {cells[1], cells[2], cells[3]};
  }
  return rows;
}

TEST(KernelCoverage, TheBuildHasEveryKernelTheTableLists) {
  const std::string generated = table_of_this_build();
  const auto built = parse(generated);
  bool cuda_built = false;
  for (const auto& [name, row] : built) cuda_built = cuda_built || row.cuda == "kernel";
  if (std::getenv("ANVIL_WRITE_KERNEL_COVERAGE")) {
    ASSERT_TRUE(cuda_built) << "write the table from a build with the CUDA kernels (the plain build), not this one";
    std::ofstream(ANVIL_KERNEL_COVERAGE_FILE) << generated;
    GTEST_SKIP() << "wrote " << ANVIL_KERNEL_COVERAGE_FILE;
  }
  std::ifstream file(ANVIL_KERNEL_COVERAGE_FILE);
  ASSERT_TRUE(file) << "cannot read " << ANVIL_KERNEL_COVERAGE_FILE;
  std::stringstream text;
  text << file.rdbuf();
  const auto listed = parse(text.str());
  ASSERT_FALSE(listed.empty()) << ANVIL_KERNEL_COVERAGE_FILE << " has no table rows";
  for (const auto& [name, want] : listed) {
    auto it = built.find(name);
    if (it == built.end()) {
      // Declared by the core file that calls it (ANVIL_DECLARE_KERNEL_OP), so
      // every build knows every op, kernels or not.
      ADD_FAILURE() << "op " << name << " is in the table but not declared in this build; declare it in its "
                    << "core file or regenerate the table";
      continue;
    }
    const Row& got = it->second;
    EXPECT_EQ(got.fallback, want.fallback) << "op " << name << ": its fallback changed; regenerate the table";
    EXPECT_EQ(got.cpu, want.cpu) << "op " << name << " on cpu: the table says " << want.cpu << ", this build has "
                                 << got.cpu;
    // Builds without CUDA (the sanitizer trees) have no CUDA column to hold.
    if (cuda_built)
      EXPECT_EQ(got.cuda, want.cuda) << "op " << name << " on cuda: the table says " << want.cuda << ", this build has "
                                     << got.cuda;
  }
  for (const auto& [name, row] : built)
    EXPECT_TRUE(listed.count(name)) << "op " << name << " is not in " << ANVIL_KERNEL_COVERAGE_FILE
                                    << "; regenerate the table";
}

}  // namespace
}  // namespace anvil
