#include "nn/train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "nn/train/metrics_log.h"
#include "nn/train/monitor.h"

namespace anvil::nn::train {

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }

ProgressReporter::ProgressReporter(ProgressMode mode, int64_t log_every_n_steps, std::ostream* out)
    : out_(out ? *out : std::cout), mode_(mode), every_(std::max<int64_t>(1, log_every_n_steps)) {
  if (mode_ == ProgressMode::Auto) mode_ = stdout_is_terminal() ? ProgressMode::Bar : ProgressMode::Lines;
}

void ProgressReporter::start_epoch(int64_t epoch, int64_t max_epochs, int64_t num_batches) {
  epoch_start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
}

std::string ProgressReporter::bar_line(const ProgressUpdate& u, double it_per_s, int width) {
  char buf[256];
  std::string line;
  std::snprintf(buf, sizeof buf, "epoch %lld/%lld ", static_cast<long long>(u.epoch + 1),
                static_cast<long long>(u.max_epochs));
  line += buf;
  if (u.num_batches > 0) {
    const double frac = std::min(1.0, static_cast<double>(u.batch) / static_cast<double>(u.num_batches));
    const int filled = static_cast<int>(frac * width);
    line += '[' + std::string(static_cast<size_t>(filled), '#') +
            std::string(static_cast<size_t>(width - filled), '.') + ']';
    std::snprintf(buf, sizeof buf, " %lld/%lld", static_cast<long long>(u.batch),
                  static_cast<long long>(u.num_batches));
    line += buf;
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(u.batch));
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "  %.2f it/s", it_per_s);
  line += buf;
  if (u.num_batches > 0 && it_per_s > 0)
    line += "  ETA " + format_duration(static_cast<double>(u.num_batches - u.batch) / it_per_s);
  line += "  loss " + format_metric(u.loss);
  std::snprintf(buf, sizeof buf, "  lr %.3g", u.lr);
  line += buf;
  if (u.samples_per_s > 0) {
    std::snprintf(buf, sizeof buf, "  %.0f samples/s", u.samples_per_s);
    line += buf;
  }
  if (!u.device_info.empty()) line += "  " + u.device_info;
  return line;
}

void ProgressReporter::update(const ProgressUpdate& u) {
  if (mode_ == ProgressMode::Off) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - epoch_start_).count();
  const double it_per_s = elapsed > 0 ? static_cast<double>(u.batch) / elapsed : 0.0;
  if (mode_ == ProgressMode::Bar) {
    const bool last = u.num_batches > 0 && u.batch >= u.num_batches;
    if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    out_ << '\r' << bar_line(u, it_per_s) << "\033[K" << std::flush;  // \033[K clears the old tail
    bar_open_ = true;
    return;
  }
  if (u.global_step % every_ != 0) return;
  char buf[128];
  std::snprintf(buf, sizeof buf, "epoch %lld step %lld batch %lld/%lld", static_cast<long long>(u.epoch + 1),
                static_cast<long long>(u.global_step), static_cast<long long>(u.batch),
                static_cast<long long>(u.num_batches));
  std::string line = buf;
  line += "  loss " + format_metric(u.loss);
  std::snprintf(buf, sizeof buf, "  lr %.3g  %.2f it/s", u.lr, it_per_s);
  line += buf;
  if (u.samples_per_s > 0) {
    std::snprintf(buf, sizeof buf, "  %.0f samples/s", u.samples_per_s);
    line += buf;
  }
  if (!u.device_info.empty()) line += "  " + u.device_info;
  out_ << line << '\n' << std::flush;
}

void ProgressReporter::end_epoch(int64_t epoch, const std::map<std::string, double>& metrics) {
  if (mode_ == ProgressMode::Off) return;
  if (bar_open_) out_ << '\n';
  bar_open_ = false;
  std::string line =
      "epoch " + std::to_string(epoch + 1) + " done in " +
      format_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count());
  for (const auto& [k, v] : metrics) line += "  " + k + " " + format_metric(v);
  out_ << line << '\n' << std::flush;
}

void ProgressReporter::message(const std::string& line) {
  if (mode_ == ProgressMode::Off) return;
  if (bar_open_) out_ << "\r\033[K";
  bar_open_ = false;
  out_ << line << '\n' << std::flush;
}

}  // namespace anvil::nn::train
