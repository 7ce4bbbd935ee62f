#include "nn/data/dataset.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/ops.h"
#include "nn/data/idx.h"

namespace anvil::nn::data {

Example Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Tensor> data, targets;
  for (int64_t i : indices) {
    Example e = get(i);
    data.push_back(e.data);
    targets.push_back(e.target);
  }
  return {stack(data), stack(targets)};
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  ANVIL_CHECK(data_.defined() && targets_.defined() && data_.dim() >= 1 && targets_.dim() >= 1,
              "TensorDataset: data and targets must be tensors with at least one dim");
  ANVIL_CHECK(data_.size(0) == targets_.size(0), "TensorDataset: data has ", data_.size(0), " rows but targets have ",
              targets_.size(0));
}

Example TensorDataset::get(int64_t index) const {
  ANVIL_CHECK(index >= 0 && index < size(), "TensorDataset: index ", index, " out of range [0, ", size(), ")");
  return {data_.select(0, index), targets_.select(0, index)};
}

Example TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  Tensor idx = from_vector(indices).to(data_.device());
  return {index_select(data_, 0, idx), index_select(targets_, 0, idx.to(targets_.device()))};
}

std::shared_ptr<TensorDataset> idx_image_dataset(const std::string& dir, const std::string& split) {
  ANVIL_CHECK(split == "train" || split == "test", "idx_image_dataset: split must be 'train' or 'test', got '", split,
              "'");
  std::string prefix = dir + "/" + (split == "train" ? "train" : "t10k");
  Tensor images = read_idx(prefix + "-images-idx3-ubyte.gz");
  Tensor labels = read_idx(prefix + "-labels-idx1-ubyte.gz");
  ANVIL_CHECK(images.dim() == 3 && labels.dim() == 1 && images.size(0) == labels.size(0), "idx_image_dataset: ",
              prefix, ": expected images [N, H, W] and labels [N], got ", images.shape_str(), " and ",
              labels.shape_str());
  Tensor x = (images.to(kFloat32) / 255.0).unsqueeze(1);
  return std::make_shared<TensorDataset>(x, labels.to(kInt64));
}

CharDataset::CharDataset(const std::string& text, int64_t block_size) : block_(block_size) {
  ANVIL_CHECK(block_size >= 1, "CharDataset: block_size must be positive, got ", block_size);
  ANVIL_CHECK(static_cast<int64_t>(text.size()) > block_size, "CharDataset: text of ", text.size(),
              " bytes is too short for block_size ", block_size);
  bool present[256] = {};
  for (unsigned char c : text) present[c] = true;
  std::fill(std::begin(to_id_), std::end(to_id_), -1);
  for (int c = 0; c < 256; ++c)
    if (present[c]) {
      to_id_[c] = static_cast<int64_t>(vocab_.size());
      vocab_.push_back(static_cast<unsigned char>(c));
    }
  tokens_.reserve(text.size());
  for (unsigned char c : text) tokens_.push_back(to_id_[c]);
}

std::shared_ptr<CharDataset> CharDataset::from_file(const std::string& path, int64_t block_size) {
  std::ifstream in(path, std::ios::binary);
  ANVIL_CHECK(in.good(), "CharDataset: cannot open text file '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::make_shared<CharDataset>(ss.str(), block_size);
}

int64_t CharDataset::size() const { return static_cast<int64_t>(tokens_.size()) - block_; }

Example CharDataset::get(int64_t index) const {
  Example e = get_batch({index});
  return {e.data[0], e.target[0]};
}

Example CharDataset::get_batch(const std::vector<int64_t>& indices) const {
  int64_t n = static_cast<int64_t>(indices.size());
  std::vector<int64_t> x(n * block_), y(n * block_);
  for (int64_t b = 0; b < n; ++b) {
    int64_t i = indices[b];
    ANVIL_CHECK(i >= 0 && i < size(), "CharDataset: index ", i, " out of range [0, ", size(), ")");
    std::copy_n(tokens_.begin() + i, block_, x.begin() + b * block_);
    std::copy_n(tokens_.begin() + i + 1, block_, y.begin() + b * block_);
  }
  return {from_vector(x, {n, block_}), from_vector(y, {n, block_})};
}

std::vector<int64_t> CharDataset::encode(const std::string& s) const {
  std::vector<int64_t> ids;
  for (unsigned char c : s) {
    ANVIL_CHECK(to_id_[c] >= 0, "CharDataset::encode: byte ", int(c), " is not in the vocabulary");
    ids.push_back(to_id_[c]);
  }
  return ids;
}

std::string CharDataset::decode(const std::vector<int64_t>& ids) const {
  std::string s;
  for (int64_t id : ids) {
    ANVIL_CHECK(id >= 0 && id < vocab_size(), "CharDataset::decode: id ", id, " out of range [0, ", vocab_size(), ")");
    s += static_cast<char>(vocab_[id]);
  }
  return s;
}

}  // namespace anvil::nn::data
