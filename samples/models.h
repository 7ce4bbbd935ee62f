#pragma once
// The samples' models, shared by the samples (samples/*.cpp) and the training
// benchmarks (bench/train/), so a benchmark times exactly what a sample trains.
// bench/pytorch/ has the same models in PyTorch; keep them in step.
//
//   auto mlp = anvil::samples::make_mlp();   // Fashion-MNIST [N, 1, 28, 28] -> logits [N, 10]
//   auto cnn = anvil::samples::make_cnn();
//   auto gpt = std::make_shared<anvil::samples::Gpt>(anvil::samples::GptOptions{.vocab = 100});
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <anvil/anvil.h>

namespace anvil::samples {

// Fashion-MNIST MLP: 784 -> 256 -> 128 -> 10.
inline std::shared_ptr<nn::Module> make_mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 256),
                                          std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.1),
                                          std::make_shared<nn::Linear>(256, 128), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(128, 10));
}

// Fashion-MNIST CNN: two conv blocks (conv, batch norm, relu, 2x2 max pool),
// then a classifier.
inline std::shared_ptr<nn::Module> make_cnn() {
  auto block = [](int64_t in, int64_t out) {
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(
            nn::Conv2dOptions{.in_channels = in, .out_channels = out, .kernel_size = 3, .padding = 1, .bias = false}),
        std::make_shared<nn::BatchNorm2d>(out), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2));
  };
  return std::make_shared<nn::Sequential>(block(1, 32), block(32, 64), std::make_shared<nn::Flatten>(),
                                          std::make_shared<nn::Linear>(64 * 7 * 7, 128), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Linear>(128, 10));
}

// The defaults are char_gpt's defaults; vocab must be set (the corpus's
// number of distinct bytes).
struct GptOptions {
  int64_t vocab = 0, block = 64, n_embd = 128, n_head = 4, n_layer = 4;
  double dropout = 0.1;
};

// A small GPT: token + position embeddings, pre-LN transformer blocks, a
// final LayerNorm and a linear head.
class Gpt : public nn::Module {
 public:
  explicit Gpt(const GptOptions& o) : nn::Module("Gpt"), o_(o) {
    tok = register_module("tok", std::make_shared<nn::Embedding>(o.vocab, o.n_embd));
    pos = register_module("pos", std::make_shared<nn::Embedding>(o.block, o.n_embd));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < o.n_layer; ++i)
      blocks->push_back(std::make_shared<nn::TransformerBlock>(
          nn::TransformerOptions{.n_embd = o.n_embd, .n_head = o.n_head, .dropout = o.dropout}));
    ln = register_module("ln", std::make_shared<nn::LayerNorm>(o.n_embd));
    head = register_module("head", std::make_shared<nn::Linear>(o.n_embd, o.vocab));
    // GPT-2's initialisation: small normal weights.
    for (auto& [name, p] : named_parameters())
      if (name.ends_with("weight") && p.dim() == 2) nn::init::normal_(p, 0.0, 0.02);
  }

  // tokens [B, T] int64 -> logits [B, T, vocab]
  Tensor forward(const Tensor& tokens) override {
    int64_t t = tokens.size(1);
    ANVIL_CHECK(t <= o_.block, "Gpt: sequence of ", t, " tokens is longer than the block size ", o_.block);
    Tensor positions = arange(t, TensorOptions(kInt64).device(tokens.device()));
    Tensor x = tok->forward(tokens) + pos->forward(positions);
    for (auto& block : blocks->children()) x = block->forward(x);
    return head->forward(ln->forward(x));
  }

  const GptOptions& options() const { return o_; }
  std::shared_ptr<nn::Embedding> tok, pos;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::LayerNorm> ln;
  std::shared_ptr<nn::Linear> head;

 private:
  GptOptions o_;
};

// Next-token loss: cross-entropy over every position of logits [B, T, vocab]
// against targets [B, T] (in float32, also under mixed precision).
inline Tensor language_model_loss(const Tensor& logits, const Tensor& targets) {
  Tensor flat = logits.to(kFloat32);
  return cross_entropy(flat.reshape({-1, flat.size(-1)}), targets.reshape({-1}));
}

// The text char_gpt trains on: a file, or every plain-text file (no
// extension) of a folder in name order, such as Debian's fortunes. The GPT's
// vocabulary is the text's distinct bytes, so the text fixes the model's size.
inline const char* kFortunesDir = "/usr/share/games/fortunes";
inline std::string read_corpus(const std::string& path) {
  namespace fs = std::filesystem;
  ANVIL_CHECK(fs::exists(path), "char_gpt: text '", path,
              "' does not exist (install Debian's fortunes, or pass --text)");
  std::ostringstream text;
  auto append = [&](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    text << in.rdbuf();
  };
  if (fs::is_directory(path)) {  // a fortunes folder: every plain-text file in it, in name order
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(path))
      if (e.is_regular_file() && !e.path().has_extension()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) append(f);
  } else {
    append(path);
  }
  return text.str();
}

}  // namespace anvil::samples
