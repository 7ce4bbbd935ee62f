#include "nn/data/dataset.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/ops.h"
#include "nn/data/idx.h"

namespace anvil::nn::data {

const Tensor& Example::operator[](size_t index) const {
  ANVIL_CHECK(index < tensors.size(), "Example: tensor ", index, " is out of range for a tuple batch of ",
              tensors.size(), " tensors");
  return tensors[index];
}

const Tensor& Example::operator[](const std::string& key) const {
  auto it = named.find(key);
  if (it == named.end()) {
    std::string keys;
    for (const auto& [k, _] : named) keys += (keys.empty() ? "" : ", ") + k;
    fail("Example: no tensor named '", key, "' in the batch (it has: ", keys.empty() ? "none" : keys, ")");
  }
  return it->second;
}

void Example::transform(const std::function<Tensor(const Tensor&)>& fn) {
  auto apply = [&](Tensor& t) {
    if (t.defined()) t = fn(t);
  };
  apply(data);
  apply(target);
  for (Tensor& t : tensors) apply(t);
  for (auto& [_, t] : named) apply(t);
}

int64_t Example::batch_size() const {
  std::vector<const Tensor*> all{&data};
  for (const Tensor& t : tensors) all.push_back(&t);
  for (const auto& [_, t] : named) all.push_back(&t);
  for (const Tensor* t : all)
    if (t->defined() && t->dim() > 0) return t->size(0);
  return 1;
}

namespace {
Tensor stack_defined(const std::vector<Tensor>& parts) {
  return parts.empty() || !parts[0].defined() ? Tensor() : stack(parts);
}
}  // namespace

Example Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Tensor> data, targets;
  std::vector<std::vector<Tensor>> tensors;
  std::map<std::string, std::vector<Tensor>> named;
  for (int64_t i : indices) {
    Example e = get(i);
    data.push_back(e.data);
    targets.push_back(e.target);
    tensors.resize(e.tensors.size());
    for (size_t k = 0; k < e.tensors.size(); ++k) tensors[k].push_back(e.tensors[k]);
    for (const auto& [key, t] : e.named) named[key].push_back(t);
  }
  Example b{stack_defined(data), stack_defined(targets), {}, {}};
  for (const auto& parts : tensors) b.tensors.push_back(stack_defined(parts));
  for (const auto& [key, parts] : named) b.named[key] = stack_defined(parts);
  return b;
}

TensorTupleDataset::TensorTupleDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  ANVIL_CHECK(!tensors_.empty(), "TensorTupleDataset: expected at least one tensor");
  for (size_t i = 0; i < tensors_.size(); ++i)
    ANVIL_CHECK(tensors_[i].defined() && tensors_[i].dim() >= 1 && tensors_[i].size(0) == tensors_[0].size(0),
                "TensorTupleDataset: every tensor needs the same first dim (",
                tensors_[0].defined() ? tensors_[0].size(0) : 0, " rows in tensor 0), tensor ", i, " is ",
                tensors_[i].defined() ? tensors_[i].shape_str() : "undefined");
}

Example TensorTupleDataset::get(int64_t index) const {
  ANVIL_CHECK(index >= 0 && index < size(), "TensorTupleDataset: index ", index, " out of range [0, ", size(), ")");
  Example e;
  for (const Tensor& t : tensors_) e.tensors.push_back(t.select(0, index));
  return e;
}

Example TensorTupleDataset::get_batch(const std::vector<int64_t>& indices) const {
  Tensor idx = from_vector(indices);
  Example e;
  for (const Tensor& t : tensors_) e.tensors.push_back(index_select(t, 0, idx.to(t.device())));
  return e;
}

TensorMapDataset::TensorMapDataset(std::map<std::string, Tensor> tensors) : tensors_(std::move(tensors)) {
  ANVIL_CHECK(!tensors_.empty(), "TensorMapDataset: expected at least one tensor");
  const auto& [first_key, first] = *tensors_.begin();
  for (const auto& [key, t] : tensors_)
    ANVIL_CHECK(t.defined() && t.dim() >= 1 && first.defined() && t.size(0) == first.size(0),
                "TensorMapDataset: every tensor needs the same first dim ('", first_key, "' has ",
                first.defined() && first.dim() ? first.size(0) : 0, " rows), '", key, "' is ",
                t.defined() ? t.shape_str() : "undefined");
}

Example TensorMapDataset::get(int64_t index) const {
  ANVIL_CHECK(index >= 0 && index < size(), "TensorMapDataset: index ", index, " out of range [0, ", size(), ")");
  Example e;
  for (const auto& [key, t] : tensors_) e.named[key] = t.select(0, index);
  return e;
}

Example TensorMapDataset::get_batch(const std::vector<int64_t>& indices) const {
  Tensor idx = from_vector(indices);
  Example e;
  for (const auto& [key, t] : tensors_) e.named[key] = index_select(t, 0, idx.to(t.device()));
  return e;
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
  ANVIL_CHECK(images.dim() == 3 && labels.dim() == 1 && images.size(0) == labels.size(0), "idx_image_dataset: ", prefix,
              ": expected images [N, H, W] and labels [N], got ", images.shape_str(), " and ", labels.shape_str());
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
