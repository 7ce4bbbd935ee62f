#pragma once
/// @file
/// Datasets: indexable collections of (data, target) examples.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace anvil::nn::data {

/// One example, or a batch of them. Most datasets fill data and target; a
/// batch of other tensors is a tuple (`tensors`: input_ids, attention_mask,
/// labels) or a map (`named`: {"input_ids": ..., "labels": ...}), which the
/// data loader batches, pins and moves to the device as it does data and
/// target, and the Trainer hands to the task as they are.
struct Example {
  Tensor data;  ///< the input (images [N, C, H, W], token ids, ...)
  Tensor target;  ///< the label or regression target
  std::vector<Tensor> tensors;  ///< a tuple example's tensors, in order
  std::map<std::string, Tensor> named;  ///< a map example's tensors, by name

  const Tensor& operator[](size_t index) const;  ///< tensors[index], checked
  const Tensor& operator[](const std::string& key) const;  ///< named.at(key), checked
  /// Replaces every defined tensor t (data, target, tensors, named) by fn(t).
  void transform(const std::function<Tensor(const Tensor&)>& fn);
  /// The first dim of the first defined tensor (data, then tensors, then
  /// named in key order); 1 when there is none.
  int64_t batch_size() const;
};

/// A collection of examples addressed by index, as torch.utils.data.Dataset.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;  ///< Number of examples.
  virtual Example get(int64_t index) const = 0;  ///< Example `index` (0 <= index < size()).
  /// A whole batch at once. The default stacks get(); datasets held as big
  /// tensors override it with one index_select.
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};

/// Examples are rows of two tensors with the same first dimension.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets);  ///< Rows of `data` paired with rows of `targets` (same first dimension).
  int64_t size() const override { return data_.size(0); }  ///< Number of rows.
  Example get(int64_t index) const override;  ///< Row `index` of data and targets.
  Example get_batch(const std::vector<int64_t>& indices) const override;
  const Tensor& data() const { return data_; }  ///< All the data rows.
  const Tensor& targets() const { return targets_; }  ///< All the targets.

 private:
  Tensor data_, targets_;
};

/// Examples are rows of several tensors with the same first dimension: a
/// tuple batch (Example::tensors), e.g. (input_ids, attention_mask, labels).
class TensorTupleDataset : public Dataset {
 public:
  explicit TensorTupleDataset(std::vector<Tensor> tensors);  ///< Rows of `tensors` (one first dimension for all).
  int64_t size() const override { return tensors_[0].size(0); }  ///< Number of rows.
  Example get(int64_t index) const override;  ///< Row `index` of every tensor, as a tuple example.
  Example get_batch(const std::vector<int64_t>& indices) const override;

 private:
  std::vector<Tensor> tensors_;
};

/// The same with names: a map batch (Example::named).
class TensorMapDataset : public Dataset {
 public:
  /// Rows of `tensors` (one first dimension for all), by name.
  explicit TensorMapDataset(std::map<std::string, Tensor> tensors);
  int64_t size() const override { return tensors_.begin()->second.size(0); }  ///< Number of rows.
  Example get(int64_t index) const override;  ///< Row `index` of every tensor, as a map example.
  Example get_batch(const std::vector<int64_t>& indices) const override;

 private:
  std::map<std::string, Tensor> tensors_;
};

/// MNIST-format image classification (MNIST, Fashion-MNIST): images become
/// float32 [N, 1, H, W] in [0, 1], labels int64 [N]. `split` is "train" or
/// "test" ("t10k" files).
std::shared_ptr<TensorDataset> idx_image_dataset(const std::string& dir, const std::string& split);
/// Where Debian's dataset-fashion-mnist package puts the files.
inline const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Next-byte prediction over a text: example i is (bytes[i : i+block],
/// bytes[i+1 : i+block+1]) as int64 token ids in a vocabulary of the distinct
/// bytes of the text.
class CharDataset : public Dataset {
 public:
  CharDataset(const std::string& text, int64_t block_size);  ///< Examples of `block_size` bytes over `text`.
  /// The same over a file's bytes.
  static std::shared_ptr<CharDataset> from_file(const std::string& path, int64_t block_size);
  int64_t size() const override;  ///< Number of examples (text length - block_size).
  /// Example `index`: (bytes i..i+block, bytes i+1..i+block+1) as token ids.
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }  ///< Number of distinct bytes.
  int64_t block_size() const { return block_; }  ///< Bytes per example.
  /// The token ids of `s` (its bytes must be in the vocabulary).
  std::vector<int64_t> encode(const std::string& s) const;
  std::string decode(const std::vector<int64_t>& ids) const;  ///< The text of token ids.

 private:
  std::vector<unsigned char> vocab_;
  int64_t to_id_[256];
  std::vector<int64_t> tokens_;
  int64_t block_;
};

}  // namespace anvil::nn::data
