// CPU memory, copies and streams. The CPU has one in-order "stream" (id 0):
// every kernel has finished when its call returns, so synchronisation is a no-op.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "core/base/error.h"
#include "kernels/cpu/cpu_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/vector_convert.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/shapes/bits_of.h"

namespace anvil::cpu {
namespace {

void check_device_index(const char* op, int device_index) {
  ANVIL_CHECK(device_index == 0, op, ": the cpu has one device, index 0; got index ", device_index);
}

void parallel_memcpy(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const auto n = static_cast<int64_t>(nbytes);
  parallel_for(n, n / 4, [&](int64_t begin, int64_t end) { std::memcpy(d + begin, s + begin, end - begin); });
}

using shapes::bits_of;

// A transpose-like copy (the destination is contiguous along the loop's
// innermost dim, the source along the next one) moved in square tiles, so that
// both sides use whole cache lines instead of one element per line on one side.
template <typename Bits> bool copy_in_tiles(const StridedLoop<2>& loop, char* dst, char* src) {
  constexpr int64_t kTile = 32, item = sizeof(Bits);
  if (loop.ndim() < 2 || loop.strides(0)[0] != item || loop.strides(1)[1] != item || loop.strides(0)[1] == item)
    return false;
  StridedLoop<2> outer;
  for (int d = 2; d < loop.ndim(); ++d) outer.add_outer_dim(loop.size(d), loop.strides(d));
  const int64_t n0 = loop.size(0), n1 = loop.size(1);
  const int64_t dst_step1 = loop.strides(1)[0], src_step0 = loop.strides(0)[1];
  const int64_t tiles0 = (n0 + kTile - 1) / kTile, tiles1 = (n1 + kTile - 1) / kTile;
  const int64_t tiles = tiles0 * tiles1;
  parallel_for(outer.numel() * tiles, loop.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const auto off = outer.offsets_at(t / tiles);
      const int64_t i0 = (t % tiles0) * kTile, j0 = (t % tiles / tiles0) * kTile;
      const int64_t i1 = std::min(n0, i0 + kTile), j1 = std::min(n1, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j) {
        Bits* d = reinterpret_cast<Bits*>(dst + off[0] + j * dst_step1);
        const char* s = src + off[1] + j * item;
        for (int64_t i = i0; i < i1; ++i) d[i] = *reinterpret_cast<const Bits*>(s + i * src_step0);
      }
    }
  });
  return true;
}

// float32 <-> float16/bfloat16: the vector conversion on every run that is
// contiguous on both sides, the scalar one on the others (the same bits).
template <typename To, typename From> void convert_runs(const View& dst, const View& src) {
  StridedLoop<2> loop({&dst, &src});
  const int64_t out_floats = dst.numel() * static_cast<int64_t>(sizeof(To)) / static_cast<int64_t>(sizeof(float));
  loop.run_parallel({static_cast<char*>(dst.data), static_cast<char*>(src.data)}, [&](const StridedLoop<2>::Run& r) {
    if (r.stride[0] == sizeof(To) && r.stride[1] == sizeof(From))
      return vec::convert(reinterpret_cast<To*>(r.ptr[0]), reinterpret_cast<const From*>(r.ptr[1]), r.n,
                          vec::stream_output(out_floats, r.n));
    for (int64_t i = 0; i < r.n; ++i)
      *reinterpret_cast<To*>(r.ptr[0] + i * r.stride[0]) =
          cast_value<To>(*reinterpret_cast<const From*>(r.ptr[1] + i * r.stride[1]));
  });
}

template <typename T> T scalar_as(const Scalar& value) {
  if constexpr (std::is_same_v<T, bool>)
    return value.to_double() != 0.0 || value.to_int() != 0;
  else if constexpr (std::is_integral_v<T>)
    return value.is_floating() ? cast_value<T>(value.to_double()) : static_cast<T>(value.to_int());
  else
    return cast_value<T>(value.to_double());
}

}  // namespace

CpuRuntime::CpuRuntime() : allocator_(make_default_cpu_allocator()) {}

Allocator& CpuRuntime::allocator(int device_index) {
  check_device_index("cpu allocator", device_index);
  return *allocator_;
}

void CpuRuntime::copy(const View& dst, const View& src) {
  ANVIL_CHECK(dst.shape == src.shape, "copy: destination shape ", dst.shape, " differs from source shape ", src.shape);
  if (dst.numel() == 0) return;
  if (dst.dtype == src.dtype) {
    if (dst.is_contiguous() && src.is_contiguous()) {
      parallel_memcpy(dst.data, src.data, static_cast<size_t>(dst.numel()) * itemsize(dst.dtype));
      return;
    }
    visit_dtype(dst.dtype, [&](auto tag) {
      using Bits = typename bits_of<sizeof(tag)>::type;
      if (copy_in_tiles<Bits>(StridedLoop<2>({&dst, &src}), static_cast<char*>(dst.data), static_cast<char*>(src.data)))
        return;
      map_elements<Bits, Bits>(dst, {&src}, [](Bits x) { return x; });
    });
    return;
  }
  visit_dtype(dst.dtype, [&](auto dst_tag) {
    using To = decltype(dst_tag);
    visit_dtype(src.dtype, [&](auto src_tag) {
      using From = decltype(src_tag);
      if constexpr (vec::converts<To, From>) {
        if (vec::enabled()) return convert_runs<To, From>(dst, src);
      }
      map_elements<To, From>(dst, {&src}, [](From x) { return cast_value<To>(x); });
    });
  });
}

void CpuRuntime::copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index,
                                bool /*non_blocking*/) {
  check_device_index("copy_from_host", device_index);
  parallel_memcpy(dst, host_src, nbytes);
}

void CpuRuntime::copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool /*non_blocking*/) {
  check_device_index("copy_to_host", device_index);
  parallel_memcpy(host_dst, src, nbytes);
}

void fill(const View& out, const Scalar& value) {
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_as<T>(value);
    map_elements<T>(out, {}, [v]() { return v; });
  });
}

Stream CpuRuntime::current_stream(int device_index) {
  check_device_index("current_stream", device_index);
  return Stream{Device::cpu(), 0};
}

void CpuRuntime::set_current_stream(const Stream& stream) {
  ANVIL_CHECK(stream.device == Device::cpu() && stream.id == 0, "set_current_stream: the cpu has only stream 0 of ",
              "device cpu; got stream ", stream.id, " of device ", stream.device);
}

Stream CpuRuntime::new_stream(int device_index) {
  check_device_index("new_stream", device_index);
  return Stream{Device::cpu(), 0};  // work on the cpu is in order anyway
}

void CpuRuntime::synchronize(int device_index) { check_device_index("synchronize", device_index); }

void CpuRuntime::stream_wait(const Stream& /*waiter*/, const Stream& /*producer*/) {}

void* CpuRuntime::native_stream(const Stream& /*stream*/) { return nullptr; }

// CPU work runs in order as it is called, so an event is done once recorded
// and its time is the moment it was recorded.
namespace {
struct CpuEvent {
  std::chrono::steady_clock::time_point recorded;
  bool was_recorded = false;
};
CpuEvent& cpu_event(uint64_t event) {
  ANVIL_CHECK(event != 0, "event: not an event of the cpu backend");
  return *reinterpret_cast<CpuEvent*>(static_cast<uintptr_t>(event));
}
}  // namespace

uint64_t CpuRuntime::new_event(int device_index, bool /*timing*/) {
  check_device_index("Event", device_index);
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(new CpuEvent));
}

void CpuRuntime::destroy_event(int /*device_index*/, uint64_t event) {
  delete reinterpret_cast<CpuEvent*>(static_cast<uintptr_t>(event));
}

void CpuRuntime::record_event(uint64_t event, const Stream& /*stream*/) {
  CpuEvent& e = cpu_event(event);
  e.recorded = std::chrono::steady_clock::now();
  e.was_recorded = true;
}

void CpuRuntime::wait_event(const Stream& /*stream*/, uint64_t /*event*/) {}

bool CpuRuntime::event_done(int /*device_index*/, uint64_t /*event*/) { return true; }

void CpuRuntime::synchronize_event(int /*device_index*/, uint64_t /*event*/) {}

double CpuRuntime::event_elapsed_ms(int /*device_index*/, uint64_t start, uint64_t end) {
  const CpuEvent &a = cpu_event(start), &b = cpu_event(end);
  ANVIL_CHECK(a.was_recorded && b.was_recorded, "Event::elapsed_ms: both events must have been recorded");
  return std::chrono::duration<double, std::milli>(b.recorded - a.recorded).count();
}

ANVIL_REGISTER_KERNEL(kernel::Fill, CPU, fill);

}  // namespace anvil::cpu
