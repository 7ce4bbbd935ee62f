#pragma once
// Shared fixtures for the Trainer tests: a small synthetic classification
// problem (Gaussian blobs) and a small MLP.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/ops.h"
#include "nn/data/dataloader.h"
#include "nn/data/dataset.h"
#include "nn/layers/layers.h"

namespace anvil::testing {

// n points in `dims` dimensions around `classes` centres (spread 3 apart,
// noise 1): well separated, so a small MLP reaches ~99% accuracy. The centres
// depend on centre_seed only, so two sets with the same centre_seed and
// different noise_seed are a train and a validation split of one problem.
inline std::shared_ptr<nn::data::TensorDataset> blobs(int64_t n, int64_t dims, int64_t classes, uint64_t centre_seed,
                                                      uint64_t noise_seed = 1000) {
  manual_seed(centre_seed);
  Tensor centres = mul(randn({classes, dims}), Scalar(3.0));
  manual_seed(noise_seed);
  Tensor labels = randint(0, classes, {n});
  Tensor points = add(index_select(centres, 0, labels), randn({n, dims}));
  return std::make_shared<nn::data::TensorDataset>(points, labels);
}

inline std::shared_ptr<nn::Sequential> mlp(int64_t in, int64_t hidden, int64_t out, double dropout = 0.0) {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(in, hidden));
  m->push_back(std::make_shared<nn::ReLU>());
  if (dropout > 0) m->push_back(std::make_shared<nn::Dropout>(dropout));
  m->push_back(std::make_shared<nn::Linear>(hidden, out));
  return m;
}

inline nn::data::DataLoaderOptions loader_options(int64_t batch_size, bool shuffle = false, uint64_t seed = 0,
                                                  bool drop_last = false) {
  nn::data::DataLoaderOptions o;
  o.batch_size = batch_size;
  o.shuffle = shuffle;
  o.seed = seed;
  o.drop_last = drop_last;
  return o;
}

// A fresh folder under the system temp dir, removed with the object.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) {
    path = std::filesystem::temp_directory_path() /
           (name + "-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace anvil::testing
