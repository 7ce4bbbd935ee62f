#pragma once
/// @file
/// DataLoader: turns a Dataset into batches, optionally shuffled, assembled
/// by worker threads ahead of time (prefetch), and moved to the training
/// device so loading overlaps compute.
///
///     DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .num_workers = 2});
///     DataLoader loader(dataset, DataLoaderOptions(64).shuffle(true).workers(2));  // libtorch's spelling
///     for (int epoch = 0; epoch < 5; ++epoch)
///       for (const Example& batch : loader) { ... }   // each loop is one epoch
#include <concepts>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/base/device.h"
#include "core/base/option_field.h"
#include "nn/data/dataset.h"
#include "nn/data/sampler.h"

namespace anvil::nn::data {

/// Applied by the workers to each assembled batch; `seed` differs per batch
/// and epoch (and is reproducible), for random augmentation.
using BatchTransform = std::function<Example(Example batch, uint64_t seed)>;

/// A BatchTransform held through a pointer. DataLoaderOptions finds its fields
/// by offset (core/base/option_field.h), which needs a standard-layout struct,
/// and std::function is not one; a shared pointer is. Copies of the options
/// share the callable, which the workers only call.
class SharedBatchTransform {
 public:
  SharedBatchTransform() = default;
  /// Holds `f` (implicit, so `.transform = normalize(...)` reads as a plain field).
  template <class F>
  requires(!std::same_as<std::remove_cvref_t<F>, SharedBatchTransform> && std::constructible_from<BatchTransform, F>)
      SharedBatchTransform(F&& f)  // NOLINT: implicit, so `.transform = normalize` reads as the plain field did
      : fn_(std::make_shared<const BatchTransform>(std::forward<F>(f))) {}
  explicit operator bool() const { return fn_ && *fn_; }  ///< Whether it holds a callable.
  /// Runs the transform on `batch`.
  Example apply(Example batch, uint64_t seed) const { return (*fn_)(std::move(batch), seed); }

 private:
  std::shared_ptr<const BatchTransform> fn_;
};

/// Both anvil's aggregate, {.batch_size = 64, .shuffle = true}, and libtorch's
/// chained form, DataLoaderOptions(64).workers(2) or DataLoaderOptions().batch_size(64).drop_last(true).
struct DataLoaderOptions {
  ANVIL_OPTION(DataLoaderOptions, int64_t, batch_size) = 1;  ///< examples per batch
  ANVIL_OPTION(DataLoaderOptions, bool, shuffle) = false;  ///< a new order each epoch (seed and epoch decide it)
  ANVIL_OPTION(DataLoaderOptions, uint64_t, seed) = 0;  ///< shuffle and transform seed
  ANVIL_OPTION(DataLoaderOptions, bool, drop_last) = false;  ///< drop a last, smaller batch
  ANVIL_OPTION(DataLoaderOptions, int, num_workers) = 0;  ///< 0: batches are made on the calling thread
  ANVIL_OPTION(DataLoaderOptions, int, prefetch_factor) = 2;  ///< batches in flight per worker
  /// Workers copy each batch into page-locked host memory, so that copies to
  /// a GPU are asynchronous (Tensor::to(cuda, non_blocking)). Ignored when no
  /// GPU is usable.
  ANVIL_OPTION(DataLoaderOptions, bool, pin_memory) = false;
  /// Where batches are delivered. The copy there runs on the consuming thread
  /// (on its current stream), when the batch is taken.
  ANVIL_OPTION(DataLoaderOptions, Device, device) = Device::cpu();
  ANVIL_OPTION(DataLoaderOptions, bool,
               non_blocking) = true;  ///< device copies do not wait (needs pin_memory to overlap)
  ANVIL_OPTION(DataLoaderOptions, SharedBatchTransform, transform) = {};  ///< optional

  ///@{
  /// libtorch's name for num_workers.
  DataLoaderOptions& workers(int n) {
    num_workers = n;
    return *this;
  }
  int workers() const { return num_workers; }
  ///@}
};

/// Batches of a Dataset, shuffled and assembled by worker threads ahead of use, moved to options.device (see the file
/// comment).
class DataLoader {
 public:
  /// Batches of `dataset` as `options` say; a `sampler` replaces the sequential or shuffled order.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options,
             std::shared_ptr<const Sampler> sampler = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t num_batches() const;  ///< per epoch
  int64_t epoch() const { return epoch_; }  ///< The epoch the next begin() starts.
  /// Sets the next epoch (its shuffle order and transform seeds); what a resumed run does.
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  const DataLoaderOptions& options() const { return options_; }  ///< The settings it was built with.
  const Dataset& dataset() const { return *dataset_; }  ///< The dataset it batches.

  class Iterator;
  Iterator begin();  ///< starts an epoch (and advances the epoch counter for the next one)
  Iterator end();  ///< Past the last batch.

 private:
  struct Epoch;
  friend class Iterator;
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<const Sampler> sampler_;
  int64_t epoch_ = 0;
  std::shared_ptr<Epoch> current_;
};

/// An input iterator over one epoch's batches.
class DataLoader::Iterator {
 public:
  const Example& operator*() const { return batch_; }  ///< The current batch.
  const Example* operator->() const { return &batch_; }  ///< The current batch.
  Iterator& operator++();  ///< Moves to the next batch (waiting for a worker when it is not ready).
  bool operator==(const Iterator& o) const { return index_ == o.index_; }  ///< Same position.
  bool operator!=(const Iterator& o) const { return index_ != o.index_; }  ///< Different positions.

 private:
  friend class DataLoader;
  Iterator(std::shared_ptr<Epoch> epoch, int64_t index);
  void fetch();
  std::shared_ptr<Epoch> epoch_;
  int64_t index_;
  Example batch_;
};

}  // namespace anvil::nn::data

namespace anvil {
namespace data = nn::data;  // libtorch's torch::data::DataLoaderOptions is anvil::data::DataLoaderOptions
}  // namespace anvil
