#include "core/stream.h"

#include <utility>

#include "core/base/error.h"
#include "kernels/runtime.h"

namespace anvil {

void synchronize(Device device) { runtime_for(device).synchronize(device.index); }
Stream current_stream(Device device) { return runtime_for(device).current_stream(device.index); }
void set_current_stream(const Stream& stream) { runtime_for(stream.device).set_current_stream(stream); }
Stream new_stream(Device device) { return runtime_for(device).new_stream(device.index); }
void* native_stream(const Stream& stream) { return runtime_for(stream.device).native_stream(stream); }

void wait_stream(const Stream& waiter, const Stream& producer) {
  ANVIL_CHECK(waiter.device.type == producer.device.type, "wait_stream: a stream of ", waiter.device,
              " cannot wait for one of ", producer.device);
  runtime_for(waiter.device).stream_wait(waiter, producer);
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device)) {
  set_current_stream(stream);
}
StreamGuard::~StreamGuard() { set_current_stream(previous_); }

Event::~Event() { release(); }

Event::Event(Event&& other) noexcept
    : timing_(other.timing_), device_(other.device_), handle_(std::exchange(other.handle_, 0)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    timing_ = other.timing_;
    device_ = other.device_;
    handle_ = std::exchange(other.handle_, 0);
  }
  return *this;
}

void Event::release() noexcept {
  if (handle_ == 0) return;
  try {
    runtime_for(device_).destroy_event(device_.index, handle_);
  } catch (...) {  // a destructor: the backend may already be gone at exit
  }
  handle_ = 0;
}

void Event::record(const Stream& stream) {
  if (handle_ != 0 && stream.device != device_) release();  // re-recorded on another device
  if (handle_ == 0) {
    device_ = stream.device;
    handle_ = runtime_for(device_).new_event(device_.index, timing_);
  }
  runtime_for(device_).record_event(handle_, stream);
}

void Event::record(Device device) { record(current_stream(device)); }

void Event::wait(const Stream& stream) const {
  if (handle_ == 0) return;
  ANVIL_CHECK(stream.device.type == device_.type, "Event::wait: an event of ", device_,
              " cannot be waited for by a stream of ", stream.device);
  runtime_for(device_).wait_event(stream, handle_);
}

bool Event::query() const { return handle_ == 0 || runtime_for(device_).event_done(device_.index, handle_); }

void Event::synchronize() const {
  if (handle_ != 0) runtime_for(device_).synchronize_event(device_.index, handle_);
}

double Event::elapsed_ms(const Event& end) const {
  ANVIL_CHECK(timing_ && end.timing_, "Event::elapsed_ms: both events need enable_timing (Event(true))");
  ANVIL_CHECK(handle_ != 0 && end.handle_ != 0, "Event::elapsed_ms: both events must have been recorded");
  ANVIL_CHECK(device_ == end.device_, "Event::elapsed_ms: the events are on ", device_, " and ", end.device_);
  return runtime_for(device_).event_elapsed_ms(device_.index, handle_, end.handle_);
}

}  // namespace anvil
