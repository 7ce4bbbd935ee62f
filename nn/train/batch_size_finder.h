#pragma once
/// @file
/// The largest batch size whose forward + backward fits in device memory, as
/// Lightning's Tuner.scale_batch_size (mode "binsearch"): double the batch
/// from `start` until a try runs out of memory (or `max` is reached), then
/// binary-search between the last size that fit and the first that did not.
/// Between tries the allocator's cache is emptied so each try starts clean.
///
///     int64_t b = train::find_max_batch_size(*model, {3, 224, 224}, Device::cuda(),
///                                            {.start = 8, .max = 4096});
///
/// On CPU it returns `max` without trying: host memory is virtual and
/// overcommitted, so running out of it kills the process (the OOM killer) or
/// swaps rather than throwing an error that could be caught and retried.
/// Under a cap (set_memory_limit(Device::cpu(), bytes)) the CPU allocator
/// throws at the cap, and the search runs there as on a GPU.
///
/// After an out-of-memory error in training, the allocator has already freed
/// its cache; lower the batch to what this returns and fit again.
///
/// Leave headroom: the optimizer's state and the allocator's fragmentation in
/// a long run take more than one forward + backward; a common choice is to
/// train with ~80-90% of the result.
#include <cstdint>
#include <functional>

#include "core/base/device.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace anvil::nn::train {

/// The batch-size search's bounds.
struct BatchSizeSearchOptions {
  int64_t start = 1;  ///< the first batch size tried
  int64_t max = 4096;  ///< the largest one tried (returned as is if it fits)
};

/// Runs one try at `batch_size`; throws anvil::Error with "out of memory" in
/// its message when it does not fit (any other error propagates).
using TryBatch = std::function<void(int64_t batch_size)>;

/// The search itself, device-independent. `after_oom` runs after each failed
/// try (the finder empties the allocator's cache there). Throws anvil::Error
/// when even `start` does not fit.
int64_t search_max_batch_size(const TryBatch& try_batch, BatchSizeSearchOptions options,
                              const std::function<void()>& after_oom = {});

/// Whether an error is an out-of-memory error (its message says so).
bool is_out_of_memory(const std::exception& e);

/// Tries `model` on float32 inputs of shape [batch, sample_shape...] on
/// `device` (the model must already live there): forward, sum of the output,
/// backward, gradients cleared.
int64_t find_max_batch_size(Module& model, const Shape& sample_shape, Device device,
                            BatchSizeSearchOptions options = {});
/// The same with the caller's input for a batch size (token ids, several
/// tensors, a custom loss: do it all in `try_batch`).
int64_t find_max_batch_size(const TryBatch& try_batch, Device device, BatchSizeSearchOptions options = {});

}  // namespace anvil::nn::train
