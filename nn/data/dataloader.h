#pragma once
// DataLoader: turns a Dataset into batches, optionally shuffled, assembled
// by worker threads ahead of time (prefetch), and moved to the training
// device so loading overlaps compute.
//
//   DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .num_workers = 2});
//   for (int epoch = 0; epoch < 5; ++epoch)
//     for (const Example& batch : loader) { ... }   // each loop is one epoch
#include <functional>
#include <memory>
#include <vector>

#include "core/base/device.h"
#include "nn/data/dataset.h"
#include "nn/data/sampler.h"

namespace anvil::nn::data {

// Applied by the workers to each assembled batch; `seed` differs per batch
// and epoch (and is reproducible), for random augmentation.
using BatchTransform = std::function<Example(Example batch, uint64_t seed)>;

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;           // shuffle and transform seed
  bool drop_last = false;
  int num_workers = 0;         // 0: batches are made on the calling thread
  int prefetch_factor = 2;     // batches in flight per worker
  // Workers copy each batch into page-locked host memory, so that copies to
  // a GPU are asynchronous (Tensor::to(cuda, non_blocking)). Ignored when no
  // GPU is usable.
  bool pin_memory = false;
  // Where batches are delivered. The copy there runs on the consuming thread
  // (on its current stream), when the batch is taken.
  Device device = Device::cpu();
  bool non_blocking = true;    // device copies do not wait (needs pin_memory to overlap)
  BatchTransform transform;    // optional
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options,
             std::shared_ptr<const Sampler> sampler = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t num_batches() const;  // per epoch
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  const DataLoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }

  class Iterator;
  Iterator begin();  // starts an epoch (and advances the epoch counter for the next one)
  Iterator end();

 private:
  struct Epoch;
  friend class Iterator;
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<const Sampler> sampler_;
  int64_t epoch_ = 0;
  std::shared_ptr<Epoch> current_;
};

class DataLoader::Iterator {
 public:
  const Example& operator*() const { return batch_; }
  const Example* operator->() const { return &batch_; }
  Iterator& operator++();
  bool operator==(const Iterator& o) const { return index_ == o.index_; }
  bool operator!=(const Iterator& o) const { return index_ != o.index_; }

 private:
  friend class DataLoader;
  Iterator(std::shared_ptr<Epoch> epoch, int64_t index);
  void fetch();
  std::shared_ptr<Epoch> epoch_;
  int64_t index_;
  Example batch_;
};

}  // namespace anvil::nn::data
