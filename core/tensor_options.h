#pragma once
#include "core/base/device.h"
#include "core/base/dtype.h"

namespace anvil {

/// How a factory makes a tensor: dtype, device and requires_grad, chainable:
///
///     anvil::zeros({2, 3}, TensorOptions().dtype(kFloat64).device("cuda"))
struct TensorOptions {
  DType dtype_ = kFloat32;
  Device device_ = Device::cpu();
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(DType t) : dtype_(t) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions(DeviceType t) : device_(t) {}  // NOLINT: zeros({2}, kCUDA)
  TensorOptions(const char* d) : device_(Device(d)) {}  // NOLINT
  TensorOptions dtype(DType t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions device(DeviceType t, int index) const { return device(Device(t, index)); }
  TensorOptions requires_grad(bool r = true) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
};

/// libtorch's shorthands: zeros({2}, anvil::dtype(kFloat64).requires_grad(true)).
inline TensorOptions dtype(DType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace anvil
