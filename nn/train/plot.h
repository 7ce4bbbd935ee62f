#pragma once
/// @file
/// Training curves as an image: one or more charts side by side, each with
/// axes, ticks, labels and one polyline per series. SVG (text, scales without
/// loss) or PNG (a self-contained raster), by the path's extension.
///
///     train::Chart loss{.title = "train loss", .x_label = "step", .y_label = "loss",
///                       .series = {{"train_loss", steps, losses}}};
///     train::write_plot("curves.svg", {loss});
#include <cstdint>
#include <string>
#include <vector>

namespace anvil::nn::train {

/// One curve: a name for the legend and its points.
struct Series {
  std::string name;  ///< the legend's label
  ///@{
  /// same length; non-finite points are skipped
  std::vector<double> x, y;
  ///@}
};

/// One chart: a title, axis labels and its curves.
struct Chart {
  ///@{
  /// the chart's title and its axes' labels
  std::string title, x_label, y_label;
  ///@}
  std::vector<Series> series;  ///< the curves
};

/// The image's size.
struct PlotSize {
  int chart_width = 480;  ///< pixels per chart
  int height = 340;  ///< pixels
};

std::string render_svg(const std::vector<Chart>& charts,
                       PlotSize size = {});  ///< The charts side by side, as SVG text.
/// The charts side by side, as PNG bytes.
std::vector<uint8_t> render_png(const std::vector<Chart>& charts, PlotSize size = {});
/// .svg or .png (anything else is an error naming the path); written atomically.
void write_plot(const std::string& path, const std::vector<Chart>& charts, PlotSize size = {});

/// Up to about `target` round tick values (1, 2 or 5 times a power of ten)
/// covering [lo, hi]; what both renderers put on the axes.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace anvil::nn::train
