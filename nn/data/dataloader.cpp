#include "nn/data/dataloader.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/cuda.h"
#include "core/tensor.h"

namespace anvil::nn::data {

// One pass over the data. Workers take batch numbers in order from a shared
// counter, but never run more than `window` batches ahead of the consumer,
// which bounds memory; the consumer takes batches strictly in order.
struct DataLoader::Epoch {
  const DataLoader* loader;
  std::vector<std::vector<int64_t>> batches;  // indices of each batch
  uint64_t epoch_seed;

  std::mutex mutex;
  std::condition_variable ready, space;
  std::map<int64_t, Example> done;
  std::map<int64_t, std::exception_ptr> errors;
  int64_t next_to_make = 0, next_to_take = 0, window = 1;
  bool stopping = false;
  std::vector<std::thread> workers;
  // pin_memory, when there is a GPU to pin for; without one pinning is
  // skipped, so a config written for a GPU machine also runs on a laptop.
  bool pin = false;

  // Runs on a worker thread (on the consumer's when num_workers is 0).
  Example make(int64_t b) const {
    const DataLoaderOptions& o = loader->options_;
    Example e = loader->dataset_->get_batch(batches[static_cast<size_t>(b)]);
    if (o.transform) e = o.transform.apply(std::move(e), epoch_seed * 1000003u + static_cast<uint64_t>(b));
    // Copying into page-locked memory is host work: done here it overlaps the
    // training step, and the consumer's copy to the GPU becomes asynchronous.
    if (pin) e.transform([](const Tensor& t) { return t.device().is_cpu() ? t.pin_memory() : t; });
    return e;
  }

  // Runs on the consumer's thread, so that the copy is queued on the stream
  // the consumer computes on: a worker's copy would go to the worker thread's
  // current stream, unordered with the consumer's side streams, and its
  // device memory would belong to that stream.
  Example deliver(Example e) const {
    const DataLoaderOptions& o = loader->options_;
    e.transform([&](const Tensor& t) { return o.device != t.device() ? t.to(o.device, o.non_blocking) : t; });
    return e;
  }

  void work() {
    for (;;) {
      int64_t b;
      {
        std::unique_lock<std::mutex> lock(mutex);
        space.wait(lock,
                   [&] { return stopping || next_to_make < std::min<int64_t>(batch_count(), next_to_take + window); });
        if (stopping || next_to_make >= batch_count()) return;
        b = next_to_make++;
      }
      Example e;
      std::exception_ptr error;
      try {
        e = make(b);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (error)
        errors[b] = error;
      else
        done[b] = std::move(e);
      ready.notify_all();
    }
  }

  int64_t batch_count() const { return static_cast<int64_t>(batches.size()); }

  Example take(int64_t b) { return deliver(take_made(b)); }

  Example take_made(int64_t b) {
    if (workers.empty()) return make(b);
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return done.count(b) || errors.count(b); });
    next_to_take = b + 1;
    space.notify_all();
    if (auto it = errors.find(b); it != errors.end()) std::rethrow_exception(it->second);
    Example e = std::move(done[b]);
    done.erase(b);
    return e;
  }

  void start(int num_workers, int prefetch) {
    window = static_cast<int64_t>(num_workers) * std::max(prefetch, 1);
    for (int w = 0; w < num_workers; ++w) workers.emplace_back([this] { work(); });
  }

  ~Epoch() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    space.notify_all();
    for (auto& t : workers) t.join();
  }
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options,
                       std::shared_ptr<const Sampler> sampler)
    : dataset_(std::move(dataset)), options_(std::move(options)), sampler_(std::move(sampler)) {
  ANVIL_CHECK(dataset_ != nullptr, "DataLoader: dataset is null");
  ANVIL_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be positive, got ", options_.batch_size);
  ANVIL_CHECK(options_.num_workers >= 0, "DataLoader: num_workers must be >= 0, got ", options_.num_workers);
  ANVIL_CHECK(!(sampler_ && options_.shuffle), "DataLoader: pass either a sampler or shuffle=true, not both");
  if (!sampler_) {
    if (options_.shuffle)
      sampler_ = std::make_shared<RandomSampler>(dataset_->size(), options_.seed);
    else
      sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
  }
}

DataLoader::~DataLoader() = default;

int64_t DataLoader::num_batches() const {
  int64_t n = static_cast<int64_t>(sampler_->indices(epoch_).size());
  return options_.drop_last ? n / options_.batch_size : (n + options_.batch_size - 1) / options_.batch_size;
}

DataLoader::Iterator DataLoader::begin() {
  current_.reset();  // stops the previous epoch's workers
  auto e = std::make_shared<Epoch>();
  e->loader = this;
  e->epoch_seed = options_.seed * 7919u + static_cast<uint64_t>(epoch_);
  e->pin = options_.pin_memory && cuda::is_available();
  std::vector<int64_t> order = sampler_->indices(epoch_);
  for (size_t s = 0; s < order.size(); s += static_cast<size_t>(options_.batch_size)) {
    size_t end = std::min(order.size(), s + static_cast<size_t>(options_.batch_size));
    if (options_.drop_last && end - s < static_cast<size_t>(options_.batch_size)) break;
    e->batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(s),
                            order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  e->start(options_.num_workers, options_.prefetch_factor);
  ++epoch_;
  current_ = e;
  return Iterator(e, 0);
}

DataLoader::Iterator DataLoader::end() {
  int64_t n = current_ ? current_->batch_count() : num_batches();
  return Iterator(nullptr, n);
}

DataLoader::Iterator::Iterator(std::shared_ptr<Epoch> epoch, int64_t index) : epoch_(std::move(epoch)), index_(index) {
  if (epoch_) fetch();
}

void DataLoader::Iterator::fetch() {
  if (index_ < epoch_->batch_count()) batch_ = epoch_->take(index_);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++index_;
  fetch();
  return *this;
}

}  // namespace anvil::nn::data
