#pragma once
/// @file
/// Streams and events, as torch.cuda's: work on a device is queued on its
/// current stream and runs in order there; other streams run alongside.
///
///     Stream side = anvil::new_stream(Device::cuda(0));
///     {
///       StreamGuard on_side(side);          // ops below queue on `side`
///       y = model(x);
///     }
///     Event done;
///     done.record(side);                    // a marker after that work
///     done.wait(current_stream(Device::cuda(0)));  // the default stream waits for it
///
///     Event start(true), stop(true);        // timing events
///     start.record(); work(); stop.record(); stop.synchronize();
///     double ms = start.elapsed_ms(stop);
///
/// On the CPU every op runs when called: its one stream is stream 0, events
/// are done once recorded, and elapsed_ms is wall-clock time between records.
#include <cstdint>

#include "core/base/device.h"

namespace anvil {

/// Blocks until all work queued on `device` has finished; errors of that work
/// (a bad index in a CUDA kernel) are raised here.
void synchronize(Device device);
Stream current_stream(Device device);  ///< The stream ops on `device` queue on in this thread (stream 0 until set).
void set_current_stream(const Stream& stream);  ///< Makes `stream` its device's current stream in this thread.
/// A new stream of `device` (on the CPU, stream 0).
Stream new_stream(Device device);
/// `waiter` waits, on the device, for all work queued so far on `producer`.
void wait_stream(const Stream& waiter, const Stream& producer);
/// The backend's handle of `stream` (a cudaStream_t on CUDA; null on the CPU),
/// for libraries that queue their own work on it.
void* native_stream(const Stream& stream);

/// Makes `stream` its device's current stream for the guard's scope.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);  ///< Makes `stream` current; the destructor restores the previous one.
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

/// A marker in a stream's work. Created lazily on the device of the first
/// record(); `enable_timing` makes elapsed_ms available.
class Event {
 public:
  /// An event; with enable_timing, elapsed_ms can measure between two of them.
  explicit Event(bool enable_timing = false) : timing_(enable_timing) {}
  ~Event();
  Event(Event&& other) noexcept;  ///< Takes over other's event.
  Event& operator=(Event&& other) noexcept;  ///< Takes over other's event, releasing this one's.
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);  ///< Marks the work queued on `stream` so far.
  void record(Device device = Device::cuda());  ///< on the device's current stream
  /// `stream` waits for the work recorded before this event (a no-op before any record).
  void wait(const Stream& stream) const;
  bool query() const;  ///< whether that work has finished (true before any record)
  void synchronize() const;  ///< blocks until it has
  /// Milliseconds from this event to `end`; both recorded, finished, timing.
  double elapsed_ms(const Event& end) const;
  bool recorded() const { return handle_ != 0; }  ///< Whether record() has been called.
  Device device() const { return device_; }  ///< The device of the stream it was recorded on.

 private:
  void release() noexcept;
  bool timing_;
  Device device_;
  uint64_t handle_ = 0;
};

}  // namespace anvil
