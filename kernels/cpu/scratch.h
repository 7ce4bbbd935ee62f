#pragma once
// Scratch memory for a CPU kernel (column matrices, per-thread partial sums),
// taken from the CPU backend's allocator: its cache hands the same block back
// on the next call, where memory fresh from malloc would cost a page fault per
// 4 KiB touched. Uninitialised: the kernel writes it before reading it.
#include <algorithm>
#include <cstdint>

#include "core/base/allocator.h"

namespace anvil::cpu {

template <typename T> class Scratch {
 public:
  Scratch(Allocator& allocator, int64_t elems)
      : allocator_(allocator),
        data_(static_cast<T*>(allocator.allocate(static_cast<size_t>(std::max<int64_t>(elems, 0)) * sizeof(T)))) {}
  ~Scratch() { allocator_.deallocate(data_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  T* get() const { return data_; }

 private:
  Allocator& allocator_;
  T* data_;
};

}  // namespace anvil::cpu
