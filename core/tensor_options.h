#pragma once
/// @file
/// TensorOptions: the dtype, device and requires_grad a factory makes a tensor with.
#include "core/base/device.h"
#include "core/base/dtype.h"

namespace anvil {

/// How a factory makes a tensor: dtype, device and requires_grad, chainable:
///
///     anvil::zeros({2, 3}, TensorOptions().dtype(kFloat64).device("cuda"))
struct TensorOptions {
  DType dtype_ = kFloat32;  ///< the dtype (default float32)
  Device device_ = Device::cpu();  ///< the device (default the CPU)
  bool requires_grad_ = false;  ///< whether the new tensor is a leaf that requires grad

  TensorOptions() = default;
  /// Options with dtype `t` (implicit: zeros({2}, kInt64)).
  TensorOptions(DType t) : dtype_(t) {}  // NOLINT
  /// Options with device `d` (implicit).
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  /// Options on device type `t`, index 0 (implicit: zeros({2}, kCUDA)).
  TensorOptions(DeviceType t) : device_(t) {}  // NOLINT: zeros({2}, kCUDA)
  /// Options on the device "cuda", "cuda:1", ... (implicit).
  TensorOptions(const char* d) : device_(Device(d)) {}  // NOLINT
  /// These options with dtype `t`.
  TensorOptions dtype(DType t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  /// These options with device `d`.
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  /// These options with device (t, index).
  TensorOptions device(DeviceType t, int index) const { return device(Device(t, index)); }
  /// The same options, requiring grad (or not).
  TensorOptions requires_grad(bool r = true) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
};

/// libtorch's shorthands: zeros({2}, anvil::dtype(kFloat64).requires_grad(true)).
inline TensorOptions dtype(DType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }  ///< TensorOptions().device(d).
/// TensorOptions().requires_grad(r).
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace anvil
