#pragma once
/// @file
/// Profiler: named time ranges per thread, written as a Chrome trace (open the
/// JSON in chrome://tracing or https://ui.perfetto.dev). Ranges are recorded
/// only while the profiler is enabled, so a ProfileRange costs two clock reads
/// when profiling is off.
///
///     train::Profiler prof;
///     prof.enable();
///     { train::ProfileRange r(prof, "forward"); ... }
///     prof.write_chrome_trace("trace.json");
///
/// The Trainer enables one for the optimizer steps [profile_steps.first,
/// profile_steps.last) and records "step", "data_wait", "training_step",
/// "backward", "optimizer_step" and "validation" ranges.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace anvil::nn::train {

/// One recorded range: a Chrome trace "complete" event.
struct TraceEvent {
  std::string name;  ///< the range's name
  std::string category;  ///< the trace category
  int64_t start_us = 0;  ///< since the profiler was made
  int64_t duration_us = 0;  ///< the range's length
  int thread = 0;  ///< small per-profiler thread number, 0 = first thread seen
};

/// Named time ranges per thread, written as a Chrome trace (see the file comment).
class Profiler {
 public:
  using Clock = std::chrono::steady_clock;  ///< The clock ranges are timed with.
  Profiler();

  /// Any thread may switch it while others open ranges.
  void enable(bool on = true) { enabled_.store(on, std::memory_order_relaxed); }
  void disable() { enabled_.store(false, std::memory_order_relaxed); }  ///< enable(false).
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }  ///< Whether ranges are recorded.

  /// Thread-safe: ranges may end on loader worker threads.
  void record(const std::string& name, const std::string& category, Clock::time_point start, Clock::time_point end);
  std::vector<TraceEvent> events() const;  ///< The recorded ranges, in order.
  void clear();  ///< Drops the recorded ranges.

  /// {"traceEvents": [{"name", "cat", "ph": "X", "ts", "dur", "pid", "tid"}, ...],
  ///  "displayTimeUnit": "ms"}; times in microseconds.
  std::string chrome_trace_json() const;
  /// Written to a temporary file and renamed, so a reader never sees half a trace.
  void write_chrome_trace(const std::string& path) const;

 private:
  int thread_number(std::thread::id id);  ///< call with mutex_ held
  Clock::time_point origin_;
  /// Atomic: ranges may open on any thread (record() is thread-safe) while
  /// another switches profiling on or off, and a plain bool read and written
  /// like that is a data race. Relaxed: a range needs only some recent value;
  /// its event goes in under mutex_.
  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  std::map<std::thread::id, int> threads_;
};

/// Records [construction, destruction) as one event when the profiler is
/// enabled at construction. A null profiler records nothing.
class ProfileRange {
 public:
  /// Times a range named `name` on `profiler` (null: nothing is recorded).
  ProfileRange(Profiler* profiler, std::string name, std::string category = "anvil");
  /// Times a range named `name` on `profiler`.
  ProfileRange(Profiler& profiler, std::string name, std::string category = "anvil")
      : ProfileRange(&profiler, std::move(name), std::move(category)) {}
  ~ProfileRange();
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

 private:
  Profiler* profiler_;
  std::string name_, category_;
  Profiler::Clock::time_point start_;
};

}  // namespace anvil::nn::train
