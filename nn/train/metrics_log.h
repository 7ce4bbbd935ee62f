#pragma once
// MetricsLog: training metrics as rows in a CSV or JSON Lines file, chosen by
// the path's extension (.csv, .jsonl). Every row is written as it comes (a
// crashed run keeps what it logged). Rows may have different keys (a step row
// has train_loss and lr, an epoch row adds val_*): JSONL rows simply differ;
// a CSV keeps one header over all keys seen so far and leaves missing cells
// empty, rewriting the file when a row brings a new column.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace anvil::nn::train {

using MetricsRow = std::map<std::string, double>;

class MetricsLog {
 public:
  enum class Format { Csv, JsonLines };
  // Truncates the file. Throws anvil::Error for an unknown extension.
  explicit MetricsLog(std::string path);

  void append(const MetricsRow& row);
  const std::string& path() const { return path_; }
  Format format() const { return format_; }
  const std::vector<MetricsRow>& rows() const { return rows_; }
  // Columns in file order: epoch, step first, then the rest by name.
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  void rewrite_csv() const;
  std::string csv_line(const MetricsRow& row) const;
  std::string path_;
  Format format_;
  std::vector<MetricsRow> rows_;
  std::vector<std::string> columns_;
};

// Formats a number for a log: integers without a fraction, others with up to
// 8 significant digits; non-finite values as "nan", "inf", "-inf".
std::string format_metric(double value);

}  // namespace anvil::nn::train
