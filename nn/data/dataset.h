#pragma once
// Datasets: indexable collections of (data, target) examples.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace anvil::nn::data {

struct Example {
  Tensor data;
  Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  // A whole batch at once. The default stacks get(); datasets held as big
  // tensors override it with one index_select.
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};

// Examples are rows of two tensors with the same first dimension.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets);
  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

// MNIST-format image classification (MNIST, Fashion-MNIST): images become
// float32 [N, 1, H, W] in [0, 1], labels int64 [N]. `split` is "train" or
// "test" ("t10k" files).
std::shared_ptr<TensorDataset> idx_image_dataset(const std::string& dir, const std::string& split);
inline const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Next-byte prediction over a text: example i is (bytes[i : i+block],
// bytes[i+1 : i+block+1]) as int64 token ids in a vocabulary of the distinct
// bytes of the text.
class CharDataset : public Dataset {
 public:
  CharDataset(const std::string& text, int64_t block_size);
  static std::shared_ptr<CharDataset> from_file(const std::string& path, int64_t block_size);
  int64_t size() const override;
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  int64_t block_size() const { return block_; }
  std::vector<int64_t> encode(const std::string& s) const;
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  std::vector<unsigned char> vocab_;
  int64_t to_id_[256];
  std::vector<int64_t> tokens_;
  int64_t block_;
};

}  // namespace anvil::nn::data
