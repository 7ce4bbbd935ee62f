// MetricsLog (CSV / JSONL), plots (SVG / PNG) and the progress output.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nn/train/metrics_log.h"
#include "nn/train/plot.h"
#include "nn/train/progress.h"
#include "nn/train/raster.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MetricsLog, CsvGrowsItsHeaderAndKeepsEveryRow) {
  testing::TempDir dir("anvil-metrics");
  train::MetricsLog log(dir.file("m.csv"));
  log.append({{"step", 1}, {"epoch", 0}, {"train_loss", 0.5}, {"lr", 0.001}});
  log.append({{"step", 2}, {"epoch", 0}, {"train_loss", 0.25}, {"lr", 0.001}});
  log.append({{"step", 2}, {"epoch", 0}, {"val_loss", 0.75}});
  log.append({{"step", 3}, {"epoch", 1}, {"train_loss", std::nan("")}, {"lr", 1e-4}});
  EXPECT_EQ(read_file(dir.file("m.csv")),
            "epoch,step,lr,train_loss,val_loss\n"
            "0,1,0.001,0.5,\n"
            "0,2,0.001,0.25,\n"
            "0,2,,,0.75\n"
            "1,3,0.0001,nan,\n");
  EXPECT_EQ(log.rows().size(), 4u);
}

TEST(MetricsLog, JsonLinesWritesOneObjectPerRow) {
  testing::TempDir dir("anvil-metrics-jsonl");
  train::MetricsLog log(dir.file("m.JSONL"));
  EXPECT_EQ(log.format(), train::MetricsLog::Format::JsonLines);
  log.append({{"step", 1}, {"train_loss", 0.5}});
  log.append({{"step", 2}, {"val_accuracy", 0.875}, {"bad", INFINITY}});
  std::istringstream in(read_file(dir.file("m.JSONL")));
  std::string a, b, c;
  std::getline(in, a);
  std::getline(in, b);
  EXPECT_FALSE(std::getline(in, c));
  EXPECT_EQ(nlohmann::json::parse(a), nlohmann::json({{"step", 1.0}, {"train_loss", 0.5}}));
  auto jb = nlohmann::json::parse(b);
  EXPECT_EQ(jb["val_accuracy"].get<double>(), 0.875);
  EXPECT_TRUE(jb["bad"].is_null());
}

TEST(MetricsLog, AppendModeKeepsRowsAndDropsThoseAfterAResumedStep) {
  testing::TempDir dir("anvil-metrics-append");
  for (const char* name : {"m.csv", "m.jsonl"}) {
    const std::string path = dir.file(name);
    {
      train::MetricsLog log(path);
      for (int s = 1; s <= 4; ++s) log.append({{"step", s}, {"train_loss", 1.0 / s}});
      log.append({{"step", 4}, {"val_loss", 0.5}});
      log.append({{"step", 5}, {"train_loss", std::nan("")}});
    }
    train::MetricsLog log(path, train::MetricsLog::OpenMode::Append);
    ASSERT_EQ(log.rows().size(), 6u) << name;
    EXPECT_NEAR(log.rows()[2].at("train_loss"), 1.0 / 3, 1e-9);
    EXPECT_EQ(log.rows()[4].count("train_loss"), 0u) << name;  // an empty cell stays absent
    log.drop_rows_after_step(4);
    ASSERT_EQ(log.rows().size(), 5u);
    log.append({{"step", 5}, {"train_loss", 0.125}});
    train::MetricsLog reread(path, train::MetricsLog::OpenMode::Append);
    ASSERT_EQ(reread.rows().size(), 6u) << name;
    EXPECT_DOUBLE_EQ(reread.rows()[5].at("train_loss"), 0.125);
    EXPECT_DOUBLE_EQ(reread.rows()[4].at("val_loss"), 0.5);
  }
  // Appending to a file that does not exist starts it.
  train::MetricsLog fresh(dir.file("new.csv"), train::MetricsLog::OpenMode::Append);
  EXPECT_TRUE(fresh.rows().empty());
}

TEST(MetricsLog, RejectsUnknownExtensions) {
  try {
    train::MetricsLog log("/tmp/metrics.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".csv or .jsonl"), std::string::npos) << e.what();
  }
  EXPECT_EQ(train::format_metric(3.0), "3");
  EXPECT_EQ(train::format_metric(0.125), "0.125");
  EXPECT_EQ(train::format_metric(-INFINITY), "-inf");
}

TEST(Plot, NiceTicksCoverTheRangeWithRoundSteps) {
  auto t = train::nice_ticks(0.13, 2.7);
  ASSERT_GE(t.size(), 3u);
  EXPECT_LE(t.front(), 0.13);
  EXPECT_GE(t.back(), 2.7);
  EXPECT_NEAR(t[1] - t[0], 0.5, 1e-12);
  auto u = train::nice_ticks(0, 100);
  EXPECT_EQ(u, (std::vector<double>{0, 20, 40, 60, 80, 100}));
  auto v = train::nice_ticks(-3, -1);
  EXPECT_LE(v.front(), -3);
  EXPECT_GE(v.back(), -1);
}

std::vector<train::Chart> sample_charts() {
  train::Series loss{"train_loss", {}, {}};
  for (int i = 1; i <= 50; ++i) loss.x.push_back(i), loss.y.push_back(2.0 / i + 0.1);
  train::Series acc{"val_accuracy", {10, 20, 30, 40, 50}, {0.5, 0.7, 0.8, 0.85, 0.9}};
  return {{"loss", "step", "loss", {loss}}, {"accuracy <&>", "step", "val_accuracy", {acc}}};
}

TEST(Plot, SvgHasAxesLabelsAndOnePolylinePerSeries) {
  const std::string svg = train::render_svg(sample_charts());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("width=\"960\""), std::string::npos);
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 2u);
  EXPECT_NE(svg.find(">train_loss</text>"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_NE(svg.find("accuracy &lt;&amp;&gt;"), std::string::npos);  // escaped
  EXPECT_NE(svg.find("rotate(-90"), std::string::npos);  // y label
  EXPECT_EQ(svg.find("nan,"), std::string::npos);
  EXPECT_EQ(svg.find(",nan"), std::string::npos);
  // The polyline has all 50 points.
  const size_t p = svg.find("points=\"");
  const std::string pts = svg.substr(p, svg.find('"', p + 8) - p);
  EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 50);
}

// Decodes our own PNG (zlib inflate of the single IDAT) to check pixels.
struct DecodedPng {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
};
uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) | (uint32_t(uint8_t(s[at + 2])) << 8) |
         uint32_t(uint8_t(s[at + 3]));
}
DecodedPng decode(const std::string& png) {
  DecodedPng d;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  size_t at = 8;
  std::string idat;
  while (at + 8 <= png.size()) {
    const uint32_t len = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string data = png.substr(at + 8, len);
    const uint32_t crc = be32(png, at + 8 + len);
    uLong want = crc32(0, reinterpret_cast<const Bytef*>(png.data() + at + 4), 4 + len);
    EXPECT_EQ(crc, static_cast<uint32_t>(want)) << type;
    if (type == "IHDR") {
      d.width = be32(data, 0);
      d.height = be32(data, 4);
      EXPECT_EQ(data[8], 8);
      EXPECT_EQ(data[9], 2);
    }
    if (type == "IDAT") idat += data;
    at += 12 + len;
  }
  std::vector<uint8_t> raw((d.width * 3 + 1) * d.height);
  uLongf size = raw.size();
  EXPECT_EQ(uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()), Z_OK);
  EXPECT_EQ(size, raw.size());
  for (uint32_t y = 0; y < d.height; ++y) {
    EXPECT_EQ(raw[y * (d.width * 3 + 1)], 0);  // filter byte
    d.rgb.insert(d.rgb.end(), raw.begin() + y * (d.width * 3 + 1) + 1, raw.begin() + (y + 1) * (d.width * 3 + 1));
  }
  return d;
}

TEST(Plot, PngIsAValidImageWithTheCurvesDrawn) {
  std::vector<uint8_t> bytes = train::render_png(sample_charts(), {.chart_width = 400, .height = 300});
  DecodedPng d = decode(std::string(bytes.begin(), bytes.end()));
  EXPECT_EQ(d.width, 800u);
  EXPECT_EQ(d.height, 300u);
  ASSERT_EQ(d.rgb.size(), 800u * 300 * 3);
  size_t white = 0, blue = 0, orange = 0, dark = 0;
  for (size_t i = 0; i < d.rgb.size(); i += 3) {
    const uint8_t r = d.rgb[i], g = d.rgb[i + 1], b = d.rgb[i + 2];
    white += r == 255 && g == 255 && b == 255;
    blue += r == 31 && g == 119 && b == 180;  // first series colour
    dark += r < 60 && g < 60 && b < 60;  // axes and text
    orange += r == 255 && g == 127 && b == 14;
  }
  const size_t n = d.rgb.size() / 3;
  EXPECT_GT(white, n / 2);  // mostly background
  EXPECT_GT(blue, 500u);  // both curves (each chart's first series is blue)
  EXPECT_GT(dark, 2000u);  // axes, ticks, labels
  EXPECT_EQ(orange, 0u);  // no second series in either chart
  testing::TempDir dir("anvil-plot");
  train::write_plot(dir.file("c.png"), sample_charts());
  train::write_plot(dir.file("c.svg"), sample_charts());
  EXPECT_GT(read_file(dir.file("c.png")).size(), 2000u);
  EXPECT_THROW(train::write_plot(dir.file("c.jpg"), sample_charts()), Error);
  EXPECT_THROW(train::write_plot(dir.file("c.svg"), {}), Error);
}

TEST(Plot, CanvasDrawsTextAndLines) {
  train::Canvas c(40, 20);
  c.line(0, 0, 39, 19, {255, 0, 0});
  EXPECT_EQ(c.pixel(0, 0).r, 255);
  EXPECT_EQ(c.pixel(39, 19).r, 255);
  EXPECT_EQ(c.pixel(39, 0).g, 255);  // white
  train::Canvas t(20, 10);
  t.text(0, 0, "1", {0, 0, 0});
  // '1' in the 5x7 font: a vertical stem in column 2, rows 0..6.
  for (int row = 0; row < 7; ++row) EXPECT_EQ(t.pixel(2, row).r, 0) << row;
  EXPECT_EQ(t.pixel(4, 3).r, 255);
  EXPECT_EQ(train::Canvas::text_width("abc"), 18);
}

TEST(Progress, BarLineShowsProgressRateEtaAndLoss) {
  train::ProgressUpdate u;
  u.epoch = 1;
  u.max_epochs = 10;
  u.batch = 25;
  u.num_batches = 100;
  u.loss = 0.5;
  u.lr = 1e-3;
  u.device_info = "gpu 1.0 GiB 87%";
  const std::string line = train::ProgressReporter::bar_line(u, 5.0, 20);
  EXPECT_EQ(line.rfind("epoch 2/10 [#####...............] 25/100", 0), 0u) << line;
  EXPECT_NE(line.find("5.00 it/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 15.0s"), std::string::npos) << line;
  EXPECT_NE(line.find("loss 0.5"), std::string::npos) << line;
  EXPECT_NE(line.find("lr 0.001"), std::string::npos) << line;
  EXPECT_NE(line.find("gpu 1.0 GiB 87%"), std::string::npos) << line;
}

TEST(Progress, PlainLinesEveryNStepsAndBarRedrawsInPlace) {
  std::ostringstream lines;
  train::ProgressReporter plain(train::ProgressMode::Lines, 2, &lines);
  plain.start_epoch(0, 1, 4);
  for (int s = 1; s <= 4; ++s) {
    train::ProgressUpdate u;
    u.max_epochs = 1;
    u.batch = s;
    u.num_batches = 4;
    u.global_step = s;
    u.loss = 1.0 / s;
    plain.update(u);
  }
  plain.end_epoch(0, {{"val_loss", 0.25}});
  const std::string out = lines.str();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;  // steps 2 and 4, then the epoch
  EXPECT_NE(out.find("step 2 batch 2/4"), std::string::npos) << out;
  EXPECT_NE(out.find("val_loss 0.25"), std::string::npos) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);

  std::ostringstream bar;
  train::ProgressReporter tty(train::ProgressMode::Bar, 2, &bar);
  tty.start_epoch(0, 1, 2);
  train::ProgressUpdate u;
  u.max_epochs = 1;
  u.num_batches = 2;
  u.batch = 2;  // the last batch always draws
  u.global_step = 2;
  tty.update(u);
  tty.end_epoch(0, {});
  EXPECT_EQ(bar.str().rfind("\r", 0), 0u);
  EXPECT_NE(bar.str().find("[########################] 2/2"), std::string::npos) << bar.str();

  std::ostringstream none;
  train::ProgressReporter off(train::ProgressMode::Off, 1, &none);
  off.update(u);
  off.end_epoch(0, {});
  EXPECT_TRUE(none.str().empty());
}

}  // namespace
}  // namespace anvil
