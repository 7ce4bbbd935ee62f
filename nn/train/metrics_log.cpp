#include "nn/train/metrics_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "nn/train/output_file.h"

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
    std::snprintf(buf, sizeof buf, "%.9g", value);  // round-trips float32
  return buf;
}

MetricsLog::MetricsLog(std::string path, OpenMode mode) : path_(std::move(path)) {
  const std::string ext = file_extension(path_);
  if (ext == ".csv")
    format_ = Format::Csv;
  else if (ext == ".jsonl")
    format_ = Format::JsonLines;
  else
    fail("MetricsLog: '", path_, "' has extension '", ext, "'; expected .csv or .jsonl");
  if (mode == OpenMode::Append && std::filesystem::exists(path_)) {
    load_existing();
    return;
  }
  std::ofstream out(path_, std::ios::trunc);
  ANVIL_CHECK(out.good(), "MetricsLog: cannot open '", path_, "' for writing");
}

namespace {
double parse_cell(const std::string& cell, const std::string& path) {
  if (cell == "nan") return std::nan("");
  if (cell == "inf") return INFINITY;
  if (cell == "-inf") return -INFINITY;
  try {
    size_t used = 0;
    double v = std::stod(cell, &used);
    if (used == cell.size()) return v;
  } catch (const std::exception&) {
  }
  fail("MetricsLog: cannot append to '", path, "': cell '", cell, "' is not a number");
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}
}  // namespace

void MetricsLog::load_existing() {
  std::ifstream in(path_);
  ANVIL_CHECK(in.good(), "MetricsLog: cannot read '", path_, "' to append to it");
  std::string line;
  if (format_ == Format::JsonLines) {
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const std::exception& e) {
        fail("MetricsLog: cannot append to '", path_, "': a line is not JSON (", e.what(), ")");
      }
      MetricsRow row;
      for (const auto& [k, v] : j.items()) row[k] = v.is_number() ? v.get<double>() : std::nan("");
      rows_.push_back(row);
    }
    return;
  }
  if (!std::getline(in, line) || line.empty()) return;
  columns_ = split_commas(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_commas(line);
    ANVIL_CHECK(cells.size() == columns_.size(), "MetricsLog: cannot append to '", path_, "': a row has ", cells.size(),
                " cells but the header has ", columns_.size());
    MetricsRow row;
    for (size_t c = 0; c < cells.size(); ++c)
      if (!cells[c].empty()) row[columns_[c]] = parse_cell(cells[c], path_);
    rows_.push_back(row);
  }
}

std::string MetricsLog::csv_line(const MetricsRow& row) const {
  std::string line;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (c) line += ',';
    if (auto it = row.find(columns_[c]); it != row.end()) line += format_metric(it->second);
  }
  return line + '\n';
}

namespace {
std::string json_line(const MetricsRow& row) {
  nlohmann::json j = nlohmann::json::object();
  // JSON has no NaN or infinity: write those as null.
  for (const auto& [k, v] : row) j[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  return j.dump() + '\n';
}
}  // namespace

void MetricsLog::rewrite() const {
  std::string text;
  if (format_ == Format::Csv) {
    for (size_t c = 0; c < columns_.size(); ++c) text += (c ? "," : "") + columns_[c];
    text += '\n';
    for (const MetricsRow& r : rows_) text += csv_line(r);
  } else {
    for (const MetricsRow& r : rows_) text += json_line(r);
  }
  write_text_file_atomically(path_, text);
}

void MetricsLog::drop_rows_after_step(double step) {
  const size_t before = rows_.size();
  std::erase_if(rows_, [&](const MetricsRow& r) {
    auto it = r.find("step");
    return it != r.end() && it->second > step;
  });
  if (rows_.size() != before) rewrite();
}

void MetricsLog::append(const MetricsRow& row) {
  rows_.push_back(row);
  if (format_ == Format::JsonLines) {
    std::ofstream out(path_, std::ios::app);
    out << json_line(row);
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
    rewrite();
    return;
  }
  std::ofstream out(path_, std::ios::app);
  out << csv_line(row);
  ANVIL_CHECK(out.good(), "MetricsLog: writing '", path_, "' failed");
}

}  // namespace anvil::nn::train
