#pragma once
/// @file
/// TensorBoard event files, written by hand (no protobuf dependency): a
/// tfevents file is a sequence of records
///
///     uint64 length, uint32 masked_crc32c(length), bytes data[length], uint32 masked_crc32c(data)
/// (little-endian; masked = rotate-right-15(crc) + 0xa282ead8), each holding
/// one serialized tensorflow.Event. The first Event carries file_version
/// "brain.Event:2"; each scalar is an Event{wall_time, step, summary:
/// Summary{value: [Value{tag, simple_value}]}}. `tensorboard --logdir DIR`
/// reads them.
///
///     train::TensorBoardWriter tb("runs/exp1");
///     tb.add_scalar("train_loss", 0.25, /*step=*/100);
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace anvil::nn::train {

/// CRC-32C (Castagnoli), as TFRecord uses it, and its masked form.
uint32_t crc32c(std::string_view data);
uint32_t masked_crc32c(std::string_view data);  ///< crc32c with TFRecord's mask applied.

/// Writes scalars into a TensorBoard event file (see the file comment).
class TensorBoardWriter {
 public:
  /// Creates `log_dir` if needed and a new file in it named
  /// events.out.tfevents.\<unix seconds\>.\<hostname\>.\<pid\>.\<n\>; throws naming
  /// the path when it cannot be written.
  explicit TensorBoardWriter(const std::string& log_dir);
  void add_scalar(const std::string& tag, double value, int64_t step);  ///< Adds a scalar at `step`, timed now.
  /// Adds a scalar at `step` with the given wall time (seconds since the epoch).
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);
  const std::string& path() const { return path_; }  ///< The event file's path.

 private:
  void write_event(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

}  // namespace anvil::nn::train
