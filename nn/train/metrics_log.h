#pragma once
/// @file
/// MetricsLog: training metrics as rows in a CSV or JSON Lines file, chosen by
/// the path's extension (.csv, .jsonl). Every row is written as it comes (a
/// crashed run keeps what it logged). Rows may have different keys (a step row
/// has train_loss and lr, an epoch row adds val_*): JSONL rows simply differ;
/// a CSV keeps one header over all keys seen so far and leaves missing cells
/// empty, rewriting the file when a row brings a new column.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace anvil::nn::train {

using MetricsRow = std::map<std::string, double>;  ///< One row of named values.

/// Training metrics as rows of a CSV or JSON Lines file (see the file comment).
class MetricsLog {
 public:
  /// The file's format, from the path's extension.
  enum class Format { Csv, JsonLines };
  /// Whether opening starts a new file or continues one.
  enum class OpenMode {
    Truncate,  ///< start a new file
    Append,  ///< keep the rows already in the file (a resumed run); a missing file starts empty
  };
  /// Throws anvil::Error for an unknown extension or an unreadable existing file.
  explicit MetricsLog(std::string path, OpenMode mode = OpenMode::Truncate);

  /// Drops the rows whose "step" is greater than `step` and rewrites the file:
  /// a run resumed from a checkpoint at `step` logs those steps again.
  void drop_rows_after_step(double step);

  void append(const MetricsRow& row);  ///< Adds a row and writes it out.
  const std::string& path() const { return path_; }  ///< The file written.
  Format format() const { return format_; }  ///< Csv or JsonLines.
  const std::vector<MetricsRow>& rows() const { return rows_; }  ///< Every row so far, the existing file's included.
  /// Columns in file order: epoch, step first, then the rest by name.
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  void load_existing();
  void rewrite() const;
  std::string csv_line(const MetricsRow& row) const;
  std::string path_;
  Format format_;
  std::vector<MetricsRow> rows_;
  std::vector<std::string> columns_;
};

/// Formats a number for a log: integers without a fraction, others with up to
/// 9 significant digits (float32 round-trips); non-finite values as "nan", "inf", "-inf".
std::string format_metric(double value);

}  // namespace anvil::nn::train
