#pragma once
// The CPU's device Runtime (memory.cpp): the host's caching allocator, plain
// memcpy copies, and streams and events that are already complete (work on
// the CPU runs when it is called). The CPU kernels — the reference every
// other backend is tested against — register themselves from their own
// files (kernels/cpu/*.cpp, kernels/kernel_registry.h).
#include <memory>

#include "kernels/runtime.h"

namespace anvil::cpu {

class CpuRuntime final : public Runtime {
 public:
  CpuRuntime();
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }

  Allocator& allocator(int device_index) override;
  void copy(const View& dst, const View& src) override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  Stream current_stream(int device_index) override;
  void set_current_stream(const Stream& stream) override;
  Stream new_stream(int device_index) override;
  void synchronize(int device_index) override;
  void stream_wait(const Stream& waiter, const Stream& producer) override;
  void* native_stream(const Stream& stream) override;
  uint64_t new_event(int device_index, bool timing) override;
  void destroy_event(int device_index, uint64_t event) override;
  void record_event(uint64_t event, const Stream& stream) override;
  void wait_event(const Stream& stream, uint64_t event) override;
  bool event_done(int device_index, uint64_t event) override;
  void synchronize_event(int device_index, uint64_t event) override;
  double event_elapsed_ms(int device_index, uint64_t start, uint64_t end) override;

 private:
  std::unique_ptr<Allocator> allocator_;
};

}  // namespace anvil::cpu
