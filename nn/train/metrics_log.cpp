#include "nn/train/metrics_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "nn/train/text_file.h"

namespace anvil::nn::train {

namespace {
// The columns a reader looks for first.
int column_rank(const std::string& name) {
  if (name == "epoch") return 0;
  if (name == "step") return 1;
  return 2;
}
}  // namespace

std::string format_metric(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  if (value == std::round(value) && std::abs(value) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else
    std::snprintf(buf, sizeof buf, "%.8g", value);
  return buf;
}

MetricsLog::MetricsLog(std::string path) : path_(std::move(path)) {
  const std::string ext = file_extension(path_);
  if (ext == ".csv") format_ = Format::Csv;
  else if (ext == ".jsonl") format_ = Format::JsonLines;
  else fail("MetricsLog: '", path_, "' has extension '", ext, "'; expected .csv or .jsonl");
  std::ofstream out(path_, std::ios::trunc);
  ANVIL_CHECK(out.good(), "MetricsLog: cannot open '", path_, "' for writing");
}

std::string MetricsLog::csv_line(const MetricsRow& row) const {
  std::string line;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (c) line += ',';
    if (auto it = row.find(columns_[c]); it != row.end()) line += format_metric(it->second);
  }
  return line + '\n';
}

void MetricsLog::rewrite_csv() const {
  std::string text;
  for (size_t c = 0; c < columns_.size(); ++c) text += (c ? "," : "") + columns_[c];
  text += '\n';
  for (const MetricsRow& r : rows_) text += csv_line(r);
  write_text_file_atomically(path_, text);
}

void MetricsLog::append(const MetricsRow& row) {
  rows_.push_back(row);
  if (format_ == Format::JsonLines) {
    nlohmann::json j = nlohmann::json::object();
    // JSON has no NaN or infinity: write those as null.
    for (const auto& [k, v] : row) j[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    std::ofstream out(path_, std::ios::app);
    out << j.dump() << '\n';
    ANVIL_CHECK(out.good(), "MetricsLog: writing '", path_, "' failed");
    return;
  }
  bool new_column = false;
  for (const auto& [k, v] : row) {
    if (std::find(columns_.begin(), columns_.end(), k) == columns_.end()) {
      columns_.push_back(k);
      new_column = true;
    }
  }
  if (new_column) {
    std::stable_sort(columns_.begin(), columns_.end(), [](const std::string& a, const std::string& b) {
      int ra = column_rank(a), rb = column_rank(b);
      return ra != rb ? ra < rb : (ra == 2 && a < b);
    });
    rewrite_csv();
    return;
  }
  std::ofstream out(path_, std::ios::app);
  out << csv_line(row);
  ANVIL_CHECK(out.good(), "MetricsLog: writing '", path_, "' failed");
}

}  // namespace anvil::nn::train
