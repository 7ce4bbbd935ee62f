#include "nn/train/model_checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <tuple>

#include "core/base/error.h"
#include "nn/train/lr_callbacks.h"
#include "nn/train/metrics_log.h"
#include "nn/train/output_file.h"
#include "nn/train/trainer.h"

namespace anvil::nn::train {

namespace {

std::string format_value(const std::string& name, double value, const std::string& format) {
  if (format.empty()) {
    if (name == "epoch" || name == "step") return std::to_string(static_cast<long long>(value));
    return format_metric(value);
  }
  ANVIL_CHECK(format.find('%') == std::string::npos && format.find('\n') == std::string::npos,
              "ModelCheckpoint: bad format '", format, "' for ", name, " (write it as in Python: {", name, ":.4f})");
  char buf[128];
  const char last = format.back();
  const std::string spec = "%" + format;
  int n = 0;
  if (last == 'd' || last == 'i')
    n = std::snprintf(buf, sizeof buf, (spec.substr(0, spec.size() - 1) + "lld").c_str(),
                      static_cast<long long>(value));
  else if (last == 'f' || last == 'e' || last == 'g' || last == 'E' || last == 'G')
    n = std::snprintf(buf, sizeof buf, spec.c_str(), value);
  else
    fail("ModelCheckpoint: unsupported format '", format, "' for ", name, " (use d, f, e or g)");
  ANVIL_CHECK(n >= 0 && n < static_cast<int>(sizeof buf), "ModelCheckpoint: format '", format, "' for ", name,
              " gives too long a value");
  return buf;
}

}  // namespace

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {
  ANVIL_CHECK(options_.save_top_k >= -1, "ModelCheckpoint: save_top_k must be >= -1, got ", options_.save_top_k);
  ANVIL_CHECK(options_.every_n_epochs >= 1, "ModelCheckpoint: every_n_epochs must be >= 1, got ",
              options_.every_n_epochs);
  ANVIL_CHECK(!options_.filename.empty(), "ModelCheckpoint: filename is empty");
  best_model_score_ = options_.mode == MonitorMode::Min ? std::numeric_limits<double>::infinity()
                                                        : -std::numeric_limits<double>::infinity();
}

void ModelCheckpoint::on_fit_start(Trainer&, Task&) {
  ensure_writable_directory(options_.dirpath, "ModelCheckpoint directory");
}

std::string ModelCheckpoint::format_checkpoint_name(const Metrics& values) const {
  const std::string& f = options_.filename;
  std::string name;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '{') {
      name += f[i];
      continue;
    }
    const size_t close = f.find('}', i);
    ANVIL_CHECK(close != std::string::npos, "ModelCheckpoint: unclosed '{' in filename '", f, "'");
    const std::string field = f.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string key = field.substr(0, colon);
    const std::string format = colon == std::string::npos ? "" : field.substr(colon + 1);
    auto it = values.find(key);
    if (it == values.end()) {
      std::string names;
      for (const auto& [k, v] : values) names += (names.empty() ? "" : ", ") + k;
      fail("ModelCheckpoint: filename '", f, "' uses '", key, "', which is not among the values (", names, ")");
    }
    std::string shown = key;
    for (char& c : shown)
      if (c == '/') c = '_';
    if (options_.auto_insert_metric_name) name += shown + "=";
    name += format_value(key, it->second, format);
    i = close;
  }
  return (std::filesystem::path(options_.dirpath) / (name + ".safetensors")).string();
}

bool ModelCheckpoint::better(double a, double b) const {
  if (options_.monitor.empty()) return a > b;  // scores are step numbers: the latest ranks first
  return options_.mode == MonitorMode::Min ? a < b : a > b;
}

std::string ModelCheckpoint::worst_path() const {
  std::string worst;
  for (const auto& [path, score] : best_k_)
    if (worst.empty() || better(best_k_.at(worst), score)) worst = path;
  return worst;
}

void ModelCheckpoint::on_train_epoch_end(Trainer& trainer, Task&, const Metrics& metrics) {
  if ((trainer.current_epoch() + 1) % options_.every_n_epochs != 0) return;
  Metrics values = metrics;
  values["epoch"] = static_cast<double>(trainer.current_epoch());
  values["step"] = static_cast<double>(trainer.global_step());
  const bool monitored = !options_.monitor.empty();
  double score = static_cast<double>(trainer.global_step());  // without a monitor: the latest rank best
  if (monitored) {
    score = find_metric(metrics, options_.monitor, "ModelCheckpoint");
    if (std::isnan(score))
      score = options_.mode == MonitorMode::Min ? std::numeric_limits<double>::infinity()
                                                : -std::numeric_limits<double>::infinity();
  }
  const std::string path = format_checkpoint_name(values);
  auto ranks = [&](double a, double b) { return better(a, b); };

  const int64_t k = options_.save_top_k;
  bool keep = false;
  // A name already kept (a filename without changing fields) is replaced only by a better score.
  if (k == -1 || (static_cast<int64_t>(best_k_.size()) < k && !best_k_.count(path)))
    keep = k != 0;
  else if (k > 0)
    keep = ranks(score, best_k_.at(worst_path()));
  if (keep) {
    // The new ranking first: the checkpoint written now carries it (a resumed run ranks against it).
    std::map<std::string, double> kept = best_k_;
    kept[path] = score;
    std::vector<std::string> dropped;
    while (k > 0 && static_cast<int64_t>(kept.size()) > k) {
      std::string drop;
      for (const auto& [p, s] : kept)
        if (drop.empty() || ranks(kept.at(drop), s)) drop = p;
      kept.erase(drop);
      if (drop != path) dropped.push_back(drop);
    }
    const auto previous = std::make_tuple(best_k_, best_model_path_, best_model_score_);
    best_k_ = std::move(kept);
    best_model_path_.clear();
    for (const auto& [p, s] : best_k_)
      if (best_model_path_.empty() || ranks(s, best_k_.at(best_model_path_))) best_model_path_ = p;
    if (monitored) best_model_score_ = best_k_.at(best_model_path_);
    try {
      trainer.save_checkpoint(path);
    } catch (...) {
      std::tie(best_k_, best_model_path_, best_model_score_) = previous;
      throw;
    }
    for (const std::string& d : dropped) std::filesystem::remove(d);
  }
  if (options_.save_last) {
    last_model_path_ = (std::filesystem::path(options_.dirpath) / "last.safetensors").string();
    trainer.save_checkpoint(last_model_path_);
  }
}

Metrics ModelCheckpoint::state_dict() const { return {{"best_model_score", best_model_score_}}; }

void ModelCheckpoint::load_state_dict(const Metrics& state) {
  if (auto it = state.find("best_model_score"); it != state.end()) best_model_score_ = it->second;
}

std::map<std::string, std::string> ModelCheckpoint::text_state() const {
  std::string kept;  // one "score<TAB>path" line per file
  for (const auto& [path, score] : best_k_) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", score);
    kept += std::string(buf) + "\t" + path + "\n";
  }
  return {{"best_k_models", kept}, {"best_model_path", best_model_path_}, {"last_model_path", last_model_path_}};
}

void ModelCheckpoint::load_text_state(const std::map<std::string, std::string>& state) {
  best_k_.clear();
  if (auto it = state.find("best_k_models"); it != state.end()) {
    size_t at = 0;
    while (at < it->second.size()) {
      const size_t end = it->second.find('\n', at);
      const std::string line = it->second.substr(at, end - at);
      at = end == std::string::npos ? it->second.size() : end + 1;
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      const std::string path = line.substr(tab + 1);
      if (std::filesystem::exists(path)) best_k_[path] = std::strtod(line.c_str(), nullptr);  // a deleted file is gone
    }
  }
  if (auto it = state.find("best_model_path"); it != state.end()) best_model_path_ = it->second;
  if (auto it = state.find("last_model_path"); it != state.end()) last_model_path_ = it->second;
}

}  // namespace anvil::nn::train
