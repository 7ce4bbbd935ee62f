#pragma once
// The emulated GPU's stand-in for the one CUB entry point anvil calls
// (kernels/cuda/indexing.cu: the deterministic index_add sorts its indices).
// CUB's device-wide radix sort is a library, not one of our kernels, so the
// emulator does not run CUB's own code: it queues a stable sort by key on the
// stream, which gives exactly the radix sort's (stable) result.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/cuda/emulator/emulator.h"

namespace cub {

struct DeviceRadixSort {
  template <typename Key, typename Value, typename NumItems>
  static cudaError_t SortPairs(void* temp, size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                               const Value* values_in, Value* values_out, NumItems n, int begin_bit = 0,
                               int end_bit = sizeof(Key) * 8, cudaStream_t stream = nullptr) {
    if (temp == nullptr) {
      temp_bytes = 16;  // CUB's protocol: first ask for the scratch size
      return cudaSuccess;
    }
    if (begin_bit != 0 || end_bit != static_cast<int>(sizeof(Key) * 8)) return cudaErrorNotSupported;
    struct Sort {
      const Key* keys_in;
      Key* keys_out;
      const Value* values_in;
      Value* values_out;
      size_t n;
      static void run(void* p) {
        auto* s = static_cast<Sort*>(p);
        std::vector<size_t> order(s->n);
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(), [s](size_t a, size_t b) { return s->keys_in[a] < s->keys_in[b]; });
        std::vector<Key> k(s->n);
        std::vector<Value> v(s->n);
        for (size_t i = 0; i < s->n; ++i) {
          k[i] = s->keys_in[order[i]];
          v[i] = s->values_in[order[i]];
        }
        std::copy(k.begin(), k.end(), s->keys_out);
        std::copy(v.begin(), v.end(), s->values_out);
        anvil::emulator::note_initialized(s->keys_out, s->n * sizeof(Key));
        anvil::emulator::note_initialized(s->values_out, s->n * sizeof(Value));
        delete s;
      }
    };
    auto* job = new Sort{keys_in, keys_out, values_in, values_out, static_cast<size_t>(n)};
    return cudaLaunchHostFunc(stream, &Sort::run, job);
  }
};

}  // namespace cub
