#pragma once
/// @file
/// Progress output for training. On a terminal, one bar per epoch redrawn in
/// place with `\r`:
///
///     epoch 2/10 [#########.........]  45/100  12.3 it/s  ETA 4.5s  loss 0.4321  lr 1e-03  gpu 3.2 GiB 87%
/// When stdout is not a terminal (a log file, CI), plain lines every
/// log_every_n_steps steps instead, and one line per epoch with its metrics.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>

namespace anvil::nn::train {

/// How the Trainer shows progress: Auto, Bar (redrawn in place), Lines (plain lines) or Off.
enum class ProgressMode {
  Auto,  ///< Bar if stdout is a terminal, else Lines
  Bar,
  Lines,
  Off,
};

/// What a progress line shows.
struct ProgressUpdate {
  int64_t epoch = 0;  ///< 0-based
  int64_t max_epochs = 0;  ///< epochs in the run
  int64_t batch = 0;  ///< batches done in this epoch
  int64_t num_batches = 0;  ///< per epoch (0 if unknown)
  int64_t global_step = 0;  ///< optimizer steps done
  double loss = 0;  ///< the step's training loss
  double lr = 0;  ///< group 0's learning rate
  double samples_per_s = 0;  ///< throughput
  std::string device_info;  ///< e.g. "gpu 3.2 GiB 87%"; empty if none
};

/// Prints training progress as a bar or as plain lines (see the file comment).
class ProgressReporter {
 public:
  /// `out` defaults to std::cout. Auto is resolved against the real stdout.
  ProgressReporter(ProgressMode mode, int64_t log_every_n_steps, std::ostream* out = nullptr);
  ProgressMode mode() const { return mode_; }  ///< never Auto

  /// Starts epoch `epoch` of `max_epochs`, with `num_batches` batches (0: unknown).
  void start_epoch(int64_t epoch, int64_t max_epochs, int64_t num_batches);
  /// After each optimizer step. Bars redraw at most ~10 times a second.
  void update(const ProgressUpdate& u);
  /// Ends the bar line and prints the epoch's metrics.
  void end_epoch(int64_t epoch, const std::map<std::string, double>& metrics);
  void message(const std::string& line);  ///< a line of its own (clears a bar first)

  /// The bar's text for `u` (without `\r`), `width` characters of bar.
  static std::string bar_line(const ProgressUpdate& u, double it_per_s, int width = 24);

 private:
  std::ostream& out_;
  ProgressMode mode_;
  int64_t every_;
  std::chrono::steady_clock::time_point epoch_start_, last_draw_;
  bool bar_open_ = false;
};

bool stdout_is_terminal();  ///< Whether stdout is a terminal (where Auto means Bar).

}  // namespace anvil::nn::train
