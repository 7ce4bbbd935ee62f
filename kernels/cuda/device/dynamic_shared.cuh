#pragma once
// A kernel's dynamic shared memory (the launch's shared_bytes) as a T*:
//
//   float* tile = dev::dynamic_shared<float>();
//
// With nvcc this is the usual `extern __shared__` array (every declaration of
// it names the same memory, 16-byte aligned); on the emulated GPU it is the
// worker's dynamic shared buffer, which racecheck and initcheck watch like
// static shared memory and memcheck bounds by the launch's shared_bytes.
// Write dynamic shared memory only through this, so both builds agree.
#if defined(ANVIL_EMULATED_DEVICE_CODE)
namespace anvil::emulator {
unsigned char* dynamic_shared_memory();  // scheduler.cpp
}
#endif

namespace anvil::cuda::dev {

template <typename T> __device__ __forceinline__ T* dynamic_shared() {
#if defined(ANVIL_EMULATED_DEVICE_CODE)
  return reinterpret_cast<T*>(::anvil::emulator::dynamic_shared_memory());
#else
  extern __shared__ __align__(16) unsigned char anvil_dynamic_shared[];
  return reinterpret_cast<T*>(anvil_dynamic_shared);
#endif
}

}  // namespace anvil::cuda::dev
