#include "nn/train/batch_size_finder.h"

#include <string_view>

#include "core/memory.h"
#include "core/ops.h"

namespace anvil::nn::train {

bool is_out_of_memory(const std::exception& e) {
  return std::string_view(e.what()).find("out of memory") != std::string_view::npos;
}

int64_t search_max_batch_size(const TryBatch& try_batch, BatchSizeSearchOptions o,
                              const std::function<void()>& after_oom) {
  ANVIL_CHECK(o.start >= 1 && o.max >= o.start, "find_max_batch_size: need 1 <= start <= max, got start ", o.start,
              " and max ", o.max);
  // true: it fit; false: out of memory.
  auto fits = [&](int64_t b) {
    try {
      try_batch(b);
      return true;
    } catch (const Error& e) {
      if (!is_out_of_memory(e)) throw;
      if (after_oom) after_oom();
      return false;
    }
  };
  ANVIL_CHECK(fits(o.start), "find_max_batch_size: even the starting batch size ", o.start,
              " runs out of memory; lower `start` or shrink the model");
  int64_t good = o.start, bad = -1;
  while (good < o.max) {  // doubling phase
    const int64_t next = std::min(o.max, good * 2);
    if (fits(next))
      good = next;
    else {
      bad = next;
      break;
    }
  }
  if (bad < 0) return good;  // reached max
  while (bad - good > 1) {  // invariant: good fits, bad does not
    const int64_t mid = good + (bad - good) / 2;
    if (fits(mid))
      good = mid;
    else
      bad = mid;
  }
  return good;
}

int64_t find_max_batch_size(const TryBatch& try_batch, Device device, BatchSizeSearchOptions options) {
  ANVIL_CHECK(options.start >= 1 && options.max >= options.start,
              "find_max_batch_size: need 1 <= start <= max, got start ", options.start, " and max ", options.max);
  // See the header: without a cap a host OOM cannot be caught.
  if (device.is_cpu() && memory_limit(device) == 0) return options.max;
  auto release = [&] {
    synchronize(device);
    empty_cache(device);
  };
  const int64_t found = search_max_batch_size(
      [&](int64_t b) {
        try_batch(b);
        synchronize(device);  // asynchronous failures surface here
      },
      options, release);
  release();
  return found;
}

int64_t find_max_batch_size(Module& model, const Shape& sample_shape, Device device, BatchSizeSearchOptions options) {
  auto try_batch = [&](int64_t b) {
    Shape shape{b};
    shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
    model.zero_grad();
    {
      Tensor x = randn(shape, TensorOptions().device(device));
      Tensor out = model.forward(x);
      out.to(kFloat32).sum().backward();
    }
    model.zero_grad();
  };
  return find_max_batch_size(try_batch, device, options);
}

}  // namespace anvil::nn::train
