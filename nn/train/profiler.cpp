#include "nn/train/profiler.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "nn/train/output_file.h"

namespace anvil::nn::train {

Profiler::Profiler() : origin_(Clock::now()) {}

int Profiler::thread_number(std::thread::id id) {
  auto [it, inserted] = threads_.emplace(id, static_cast<int>(threads_.size()));
  return it->second;
}

void Profiler::record(const std::string& name, const std::string& category, Clock::time_point start,
                      Clock::time_point end) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  TraceEvent e{name, category, duration_cast<microseconds>(start - origin_).count(),
               duration_cast<microseconds>(end - start).count(), 0};
  std::lock_guard<std::mutex> lock(mutex_);
  e.thread = thread_number(std::this_thread::get_id());
  events_.push_back(std::move(e));
}

std::vector<TraceEvent> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

void Profiler::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
}

std::string Profiler::chrome_trace_json() const {
  nlohmann::json trace_events = nlohmann::json::array();
  const int pid = static_cast<int>(getpid());
  for (const TraceEvent& e : events()) {
    trace_events.push_back({{"name", e.name},
                            {"cat", e.category},
                            {"ph", "X"},
                            {"ts", e.start_us},
                            {"dur", e.duration_us},
                            {"pid", pid},
                            {"tid", e.thread}});
  }
  nlohmann::json doc = {{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}};
  return doc.dump();
}

void Profiler::write_chrome_trace(const std::string& path) const {
  write_text_file_atomically(path, chrome_trace_json());
}

ProfileRange::ProfileRange(Profiler* profiler, std::string name, std::string category)
    : profiler_(profiler && profiler->enabled() ? profiler : nullptr),
      name_(std::move(name)),
      category_(std::move(category)) {
  if (profiler_) start_ = Profiler::Clock::now();
}

ProfileRange::~ProfileRange() {
  if (profiler_) profiler_->record(name_, category_, start_, Profiler::Clock::now());
}

}  // namespace anvil::nn::train
