#pragma once
// Internal to the emulated NCCL: element sizes and the reductions. Every rank
// reduces the ranks' buffers in rank order (0, 1, ...), so all ranks get
// bit-identical results. float16/bfloat16 add in float and round after each
// step (as anvil's Gloo reductions do); Avg is the sum divided by the rank
// count.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/base/half.h"
#include "kernels/cuda/emulator/include/nccl.h"

namespace anvil::emulator::nccl {

inline size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;  // not a type
  }
}

namespace detail {

template <typename T, typename Acc> void combine(T* acc, const T* x, size_t n, ncclRedOp_t op) {
  for (size_t i = 0; i < n; ++i) {
    const Acc a = static_cast<Acc>(acc[i]), b = static_cast<Acc>(x[i]);
    Acc r = a;
    switch (op) {
      case ncclSum:
      case ncclAvg:
        r = static_cast<Acc>(a + b);
        break;
      case ncclProd:
        r = static_cast<Acc>(a * b);
        break;
      case ncclMax:
        r = std::max(a, b);
        break;
      case ncclMin:
        r = std::min(a, b);
        break;
      default:
        break;
    }
    acc[i] = static_cast<T>(r);
  }
}

template <typename T, typename Acc> void divide(T* acc, size_t n, int by) {
  for (size_t i = 0; i < n; ++i) acc[i] = static_cast<T>(static_cast<Acc>(acc[i]) / static_cast<Acc>(by));
}

template <typename F> void by_type(ncclDataType_t t, F&& f) {
  switch (t) {
    case ncclInt8:
      f(int8_t{}, int8_t{});
      break;
    case ncclUint8:
      f(uint8_t{}, uint8_t{});
      break;
    case ncclInt32:
      f(int32_t{}, int32_t{});
      break;
    case ncclUint32:
      f(uint32_t{}, uint32_t{});
      break;
    case ncclInt64:
      f(int64_t{}, int64_t{});
      break;
    case ncclUint64:
      f(uint64_t{}, uint64_t{});
      break;
    case ncclFloat16:
      f(Half{}, float{});
      break;
    case ncclBfloat16:
      f(BFloat16{}, float{});
      break;
    case ncclFloat32:
      f(float{}, float{});
      break;
    case ncclFloat64:
      f(double{}, double{});
      break;
    default:
      break;
  }
}

}  // namespace detail

// acc = acc op x, elementwise over n elements (raw bytes of type t).
inline void reduce_into(ncclDataType_t t, ncclRedOp_t op, void* acc, const void* x, size_t n) {
  detail::by_type(t, [&](auto tv, auto av) {
    using T = decltype(tv);
    detail::combine<T, decltype(av)>(static_cast<T*>(acc), static_cast<const T*>(x), n, op);
  });
}

// Avg's last step.
inline void divide_by(ncclDataType_t t, void* acc, size_t n, int by) {
  detail::by_type(t, [&](auto tv, auto av) {
    using T = decltype(tv);
    detail::divide<T, decltype(av)>(static_cast<T*>(acc), n, by);
  });
}

}  // namespace anvil::emulator::nccl
