#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/train/profiler.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;

TEST(Profiler, RecordsNestedRangesPerThreadAsChromeTrace) {
  train::Profiler prof;
  { train::ProfileRange off(prof, "not recorded"); }
  prof.enable();
  {
    train::ProfileRange outer(prof, "outer", "test");
    { train::ProfileRange inner(prof, "inner", "test"); }
    std::thread t([&] { train::ProfileRange r(prof, "worker"); });
    t.join();
  }
  { train::ProfileRange none(nullptr, "null profiler"); }
  prof.disable();
  { train::ProfileRange after(prof, "after disable"); }

  testing::TempDir dir("anvil-profiler");
  const std::string path = dir.file("trace.json");
  prof.write_chrome_trace(path);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.contains("traceEvents"));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& e : j["traceEvents"]) by_name[e["name"].get<std::string>()] = e;
  ASSERT_EQ(by_name.size(), 3u) << j.dump();
  for (const char* n : {"outer", "inner", "worker"}) ASSERT_TRUE(by_name.count(n)) << n;
  const auto& outer = by_name["outer"];
  const auto& inner = by_name["inner"];
  const auto& worker = by_name["worker"];
  for (const auto* e : {&outer, &inner, &worker}) {
    EXPECT_EQ((*e)["ph"], "X");
    EXPECT_TRUE((*e).contains("pid"));
    EXPECT_GE((*e)["ts"].get<int64_t>(), 0);
  }
  EXPECT_EQ(outer["cat"], "test");
  // inner lies within outer, on the same thread; the worker has its own.
  EXPECT_GE(inner["ts"].get<int64_t>(), outer["ts"].get<int64_t>());
  EXPECT_LE(inner["ts"].get<int64_t>() + inner["dur"].get<int64_t>(),
            outer["ts"].get<int64_t>() + outer["dur"].get<int64_t>());
  EXPECT_EQ(inner["tid"], outer["tid"]);
  EXPECT_NE(worker["tid"], outer["tid"]);
  // Sorted by end time: inner is recorded before outer.
  EXPECT_EQ(prof.events().size(), 3u);
  EXPECT_EQ(prof.events().front().name, "inner");
}

TEST(Profiler, ClearForgetsEvents) {
  train::Profiler prof;
  prof.enable();
  { train::ProfileRange r(prof, "x"); }
  EXPECT_EQ(prof.events().size(), 1u);
  prof.clear();
  EXPECT_TRUE(prof.events().empty());
  EXPECT_EQ(nlohmann::json::parse(prof.chrome_trace_json())["traceEvents"].size(), 0u);
}

// Profiling is switched on and off by one thread while others open ranges
// (the Trainer's profile_steps, with loader workers running). Under
// ./test.sh --tsan this fails if the switch is a plain bool.
TEST(Profiler, SwitchingWhileOtherThreadsRecordRanges) {
  train::Profiler prof;
  std::atomic<bool> stop{false};
  std::atomic<int> ranges{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w)
    workers.emplace_back([&] {
      while (!stop.load()) {
        train::ProfileRange r(prof, "worker");
        ++ranges;
      }
    });
  for (int i = 0; i < 200; ++i) {
    prof.enable();
    prof.disable();
  }
  prof.enable();
  // Until a worker has recorded while enabled (no sleep: the workers spin).
  while (prof.events().empty()) std::this_thread::yield();
  stop = true;
  for (auto& t : workers) t.join();
  EXPECT_GT(ranges.load(), 0);
  for (const auto& e : prof.events()) EXPECT_EQ(e.name, "worker");
}

}  // namespace
}  // namespace anvil
