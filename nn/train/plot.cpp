#include "nn/train/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/base/error.h"
#include "nn/train/raster.h"
#include "nn/train/output_file.h"

namespace anvil::nn::train {

namespace {

// matplotlib's tab10 colors.
constexpr Rgb kPalette[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                            {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
constexpr Rgb kBlack{0, 0, 0}, kGrid{225, 225, 225}, kText{40, 40, 40};

Rgb color_of(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string tick_label(double v) {
  if (std::abs(v) < 1e-12) v = 0;  // no "-0" or "1e-17" at the origin
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// What a renderer draws with; the layout below is written once against it.
class Painter {
 public:
  enum class Anchor { Start, Middle, End };
  virtual ~Painter() = default;
  virtual void line(double x0, double y0, double x1, double y1, Rgb c, int width) = 0;
  virtual void polyline(const std::vector<std::pair<double, double>>& pts, Rgb c) = 0;
  // (x, y) is the anchor point at the vertical middle of the text.
  virtual void text(double x, double y, const std::string& s, Anchor a, bool large, Rgb c) = 0;
  virtual void vertical_text(double x, double y, const std::string& s, Rgb c) = 0;  // centred at (x, y)
};

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  void widen_if_flat() {
    if (empty()) lo = 0, hi = 1;
    if (lo == hi) {
      const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
  }
};

void draw_chart(Painter& p, const Chart& chart, double left, double width, double height) {
  const double ml = 62, mr = 16, mt = 34, mb = 46;  // margins
  const double x0 = left + ml, x1 = left + width - mr, y0 = height - mb, y1 = mt;  // plot area (y up)
  Range xr, yr;
  for (const Series& s : chart.series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) xr.add(s.x[i]), yr.add(s.y[i]);
  xr.widen_if_flat();
  yr.widen_if_flat();
  const std::vector<double> xt = nice_ticks(xr.lo, xr.hi), yt = nice_ticks(yr.lo, yr.hi);
  // Axes span the ticks so the curve never runs past the last label.
  const double xlo = std::min(xr.lo, xt.front()), xhi = std::max(xr.hi, xt.back());
  const double ylo = std::min(yr.lo, yt.front()), yhi = std::max(yr.hi, yt.back());
  auto sx = [&](double v) { return x0 + (v - xlo) / (xhi - xlo) * (x1 - x0); };
  auto sy = [&](double v) { return y0 - (v - ylo) / (yhi - ylo) * (y0 - y1); };

  for (double t : xt) {
    p.line(sx(t), y0, sx(t), y1, kGrid, 1);
    p.line(sx(t), y0, sx(t), y0 + 4, kBlack, 1);
    p.text(sx(t), y0 + 12, tick_label(t), Painter::Anchor::Middle, false, kText);
  }
  for (double t : yt) {
    p.line(x0, sy(t), x1, sy(t), kGrid, 1);
    p.line(x0 - 4, sy(t), x0, sy(t), kBlack, 1);
    p.text(x0 - 7, sy(t), tick_label(t), Painter::Anchor::End, false, kText);
  }
  p.line(x0, y0, x1, y0, kBlack, 1);
  p.line(x0, y0, x0, y1, kBlack, 1);
  p.text((x0 + x1) / 2, 16, chart.title, Painter::Anchor::Middle, true, kBlack);
  p.text((x0 + x1) / 2, height - 14, chart.x_label, Painter::Anchor::Middle, false, kText);
  p.vertical_text(left + 12, (y0 + y1) / 2, chart.y_label, kText);

  for (size_t k = 0; k < chart.series.size(); ++k) {
    const Series& s = chart.series[k];
    std::vector<std::pair<double, double>> pts;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) pts.emplace_back(sx(s.x[i]), sy(s.y[i]));
    p.polyline(pts, color_of(k));
    // Legend: top right, one row per series.
    const double ly = y1 + 10 + 14.0 * static_cast<double>(k);
    p.line(x1 - 130, ly, x1 - 112, ly, color_of(k), 2);
    p.text(x1 - 106, ly, s.name, Painter::Anchor::Start, false, kText);
  }
}

void draw_all(Painter& p, const std::vector<Chart>& charts, PlotSize size) {
  for (size_t i = 0; i < charts.size(); ++i)
    draw_chart(p, charts[i], static_cast<double>(i) * size.chart_width, size.chart_width, size.height);
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string svg_color(Rgb c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

class SvgPainter : public Painter {
 public:
  std::ostringstream out;
  SvgPainter() { out.precision(5); }
  void line(double x0, double y0, double x1, double y1, Rgb c, int width) override {
    out << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x1 << "\" y2=\"" << y1 << "\" stroke=\""
        << svg_color(c) << "\" stroke-width=\"" << width << "\"/>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, Rgb c) override {
    if (pts.empty()) return;
    out << "<polyline fill=\"none\" stroke=\"" << svg_color(c) << "\" stroke-width=\"1.5\" points=\"";
    for (const auto& [x, y] : pts) out << x << ',' << y << ' ';
    out << "\"/>\n";
  }
  void text(double x, double y, const std::string& s, Anchor a, bool large, Rgb c) override {
    const char* anchor = a == Anchor::Start ? "start" : a == Anchor::Middle ? "middle" : "end";
    out << "<text x=\"" << x << "\" y=\"" << y << "\" text-anchor=\"" << anchor
        << "\" dominant-baseline=\"middle\" font-size=\"" << (large ? 14 : 11) << "\" fill=\"" << svg_color(c) << "\">"
        << xml_escape(s) << "</text>\n";
  }
  void vertical_text(double x, double y, const std::string& s, Rgb c) override {
    out << "<text x=\"" << x << "\" y=\"" << y << "\" transform=\"rotate(-90 " << x << ' ' << y
        << ")\" text-anchor=\"middle\" dominant-baseline=\"middle\" font-size=\"11\" fill=\"" << svg_color(c) << "\">"
        << xml_escape(s) << "</text>\n";
  }
};

class RasterPainter : public Painter {
 public:
  explicit RasterPainter(Canvas& c) : canvas_(c) {}
  void line(double x0, double y0, double x1, double y1, Rgb c, int width) override {
    canvas_.line(x0, y0, x1, y1, c, width);
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, Rgb c) override {
    if (pts.size() == 1)
      canvas_.fill_rect(static_cast<int>(pts[0].first) - 1, static_cast<int>(pts[0].second) - 1, 3, 3, c);
    for (size_t i = 1; i < pts.size(); ++i)
      canvas_.line(pts[i - 1].first, pts[i - 1].second, pts[i].first, pts[i].second, c, 2);
  }
  void text(double x, double y, const std::string& s, Anchor a, bool large, Rgb c) override {
    const int scale = large ? 2 : 1;
    const int w = Canvas::text_width(s, scale);
    const double left = a == Anchor::Start ? x : a == Anchor::Middle ? x - w / 2.0 : x - w;
    canvas_.text(static_cast<int>(std::lround(left)),
                 static_cast<int>(std::lround(y - Canvas::text_height(scale) / 2.0)), s, c, scale);
  }
  void vertical_text(double x, double y, const std::string& s, Rgb c) override {
    const int w = Canvas::text_width(s);
    canvas_.text(static_cast<int>(std::lround(x - 3.5)), static_cast<int>(std::lround(y + w / 2.0)), s, c, 1, true);
  }

 private:
  Canvas& canvas_;
};

void check_size(const std::vector<Chart>& charts, PlotSize size) {
  ANVIL_CHECK(!charts.empty(), "plot: no charts to draw");
  ANVIL_CHECK(size.chart_width >= 200 && size.height >= 150, "plot: size ", size.chart_width, "x", size.height,
              " is too small (at least 200x150 per chart)");
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  ANVIL_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && target >= 1, "nice_ticks: bad range [", lo, ", ",
              hi, "]");
  if (lo == hi) return {lo};
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  // The finest round step that gives at most target + 2 intervals.
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0})
    if ((hi - lo) / (m * magnitude) <= target + 2) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  // The first tick at or below lo, the last at or above hi.
  const double first = std::floor(lo / step);
  for (int i = 0; i < 50; ++i) {
    const double t = (first + i) * step;  // not accumulated: no drift
    ticks.push_back(t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string render_svg(const std::vector<Chart>& charts, PlotSize size) {
  check_size(charts, size);
  const int w = size.chart_width * static_cast<int>(charts.size());
  SvgPainter p;
  p.out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << size.height
        << "\" viewBox=\"0 0 " << w << ' ' << size.height << "\" font-family=\"sans-serif\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  draw_all(p, charts, size);
  p.out << "</svg>\n";
  return p.out.str();
}

std::vector<uint8_t> render_png(const std::vector<Chart>& charts, PlotSize size) {
  check_size(charts, size);
  Canvas canvas(size.chart_width * static_cast<int>(charts.size()), size.height);
  RasterPainter p(canvas);
  draw_all(p, charts, size);
  return canvas.encode_png();
}

void write_plot(const std::string& path, const std::vector<Chart>& charts, PlotSize size) {
  const std::string ext = file_extension(path);
  if (ext == ".svg")
    write_text_file_atomically(path, render_svg(charts, size));
  else if (ext == ".png")
    write_binary_file_atomically(path, render_png(charts, size));
  else
    fail("write_plot: '", path, "' has extension '", ext, "'; expected .svg or .png");
}

}  // namespace anvil::nn::train
