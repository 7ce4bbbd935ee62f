#pragma once
// The kernel registry: every op that is not part of the device runtime (a
// norm, softmax, attention, convolution, an optimizer update, ...) is a type
// with a kernel signature, declared once (kernels/ops/*_kernels.h), and each
// backend registers its kernel for it in that kernel's own file:
//
//   // kernels/ops/norm_kernels.h: the declaration
//   struct RmsNorm {
//     static constexpr const char* name = "rms_norm";
//     static constexpr bool has_fallback = true;  // core composes it where no kernel is registered
//     using Signature = void(const View& out, const View& rstd, const View& in, const View* weight, double eps);
//   };
//
//   // kernels/cpu/rms_norm.cpp: a kernel
//   ANVIL_REGISTER_KERNEL(kernel::RmsNorm, CPU, rms_norm);
//
//   // core/ops/nn/rms_norm.cpp: the caller
//   if (auto* run = find_kernel<kernel::RmsNorm>(x.device().type)) run(out, rstd, in, weight, eps);
//   else ... the composed fallback ...
//
// So adding a fused op edits no central header: one declaration, one core
// file (checks, fallback, gradient), one file per backend that has a kernel.
// The registry also knows which ops exist and which device has a kernel for
// each, which kernel_coverage prints and the coverage test holds to
// docs/kernel_coverage.md.
//
// Registration happens in static initialisers, so the kernels' library is
// linked whole (CMake's WHOLE_ARCHIVE, kernels/CMakeLists.txt): an object
// file nothing references by name is still linked and still registers.
#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "core/base/device.h"
#include "core/base/error.h"

namespace anvil {

inline constexpr int kDeviceTypeCount = 2;  // DeviceType::CPU, DeviceType::CUDA

namespace kernel_registry {

// One row of the coverage table: an op and, per device type, whether a
// kernel is registered for it.
struct OpCoverage {
  std::string name;
  bool has_fallback = false;
  std::array<bool, kDeviceTypeCount> has_kernel{};
};

// Every declared op (declared by ANVIL_DECLARE_KERNEL_OP or by registering a
// kernel for it), sorted by name.
std::vector<OpCoverage> coverage();

// Bookkeeping behind the macros; ops and kernels call these at static
// initialisation.
void note_op(const char* name, bool has_fallback);
void note_kernel(const char* name, bool has_fallback, DeviceType device);

// Each op's kernels, one slot per device type. Constant-initialised (null),
// so a lookup during another file's static initialisation is safe.
template <class Op> struct Slots {
  static inline std::array<std::atomic<typename Op::Signature*>, kDeviceTypeCount> kernels{};
};

template <class Op> bool add(DeviceType device, typename Op::Signature* fn) {
  Slots<Op>::kernels[static_cast<int>(device)].store(fn, std::memory_order_release);
  note_kernel(Op::name, Op::has_fallback, device);
  return true;
}

template <class Op> bool declare() {
  note_op(Op::name, Op::has_fallback);
  return true;
}

// Replaces Op's kernel on one device for the life of the object (null: none,
// so callers run the fallback), then puts the old one back. For tests that
// hold a kernel to its composed fallback; not for concurrent use.
template <class Op> class ScopedOverride {
 public:
  ScopedOverride(DeviceType device, typename Op::Signature* fn)
      : slot_(Slots<Op>::kernels[static_cast<int>(device)]), saved_(slot_.exchange(fn)) {}
  ~ScopedOverride() { slot_.store(saved_); }
  ScopedOverride(const ScopedOverride&) = delete;
  ScopedOverride& operator=(const ScopedOverride&) = delete;

 private:
  std::atomic<typename Op::Signature*>& slot_;
  typename Op::Signature* saved_;
};

}  // namespace kernel_registry

// The kernel registered for `Op` on `device`, or null.
template <class Op> typename Op::Signature* find_kernel(DeviceType device) {
  return kernel_registry::Slots<Op>::kernels[static_cast<int>(device)].load(std::memory_order_acquire);
}

// The kernel registered for `Op` on `device`; an op without a fallback has no
// other way to run, so a missing kernel is an error naming the op and device.
template <class Op> typename Op::Signature& kernel_for(DeviceType device) {
  auto* fn = find_kernel<Op>(device);
  ANVIL_CHECK(fn != nullptr, Op::name, ": no kernel for device ", device == DeviceType::CPU ? "cpu" : "cuda",
              " is registered (this build has none for it)");
  return *fn;
}

template <class Op> typename Op::Signature& kernel_for(const Device& device) { return kernel_for<Op>(device.type); }

}  // namespace anvil

#define ANVIL_KERNEL_CONCAT_INNER(a, b) a##b
#define ANVIL_KERNEL_CONCAT(a, b) ANVIL_KERNEL_CONCAT_INNER(a, b)

// In a kernel's .cpp/.cu: registers `fn` (a function of Op::Signature) as
// Op's kernel on DeviceType::DEVICE (CPU or CUDA).
#define ANVIL_REGISTER_KERNEL(Op, DEVICE, fn) \
  [[maybe_unused]] static const bool ANVIL_KERNEL_CONCAT(anvil_registered_kernel_, __COUNTER__) = \
      ::anvil::kernel_registry::add<Op>(::anvil::DeviceType::DEVICE, &fn)

// Lists an op in the coverage table even where no backend has a kernel (an
// op that runs on its fallback everywhere). Registering a kernel lists it too.
#define ANVIL_DECLARE_KERNEL_OP(Op) \
  [[maybe_unused]] static const bool ANVIL_KERNEL_CONCAT(anvil_declared_op_, __COUNTER__) = \
      ::anvil::kernel_registry::declare<Op>()
