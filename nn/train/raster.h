#pragma once
// Canvas: a small RGB raster with lines, rectangles and 5x7 bitmap text,
// encoded as PNG (zlib for the deflate stream and the chunk CRCs). Enough for
// the Trainer's training-curve plots without an imaging library.
#include <cstdint>
#include <string>
#include <vector>

namespace anvil::nn::train {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background = {255, 255, 255});
  int width() const { return width_; }
  int height() const { return height_; }
  Rgb pixel(int x, int y) const;
  void set_pixel(int x, int y, Rgb c);  // ignores points off the canvas

  void fill_rect(int x, int y, int w, int h, Rgb c);
  // A line `thickness` pixels wide (square pen), endpoints included.
  void line(double x0, double y0, double x1, double y1, Rgb c, int thickness = 1);

  // Text with its top-left corner at (x, y); each glyph is 5x7 pixels plus
  // one of spacing, times `scale`. rotated: reads bottom to top (y-axis labels),
  // starting at (x, y) as its bottom-left corner.
  void text(int x, int y, const std::string& s, Rgb c, int scale = 1, bool rotated = false);
  static int text_width(const std::string& s, int scale = 1) { return static_cast<int>(s.size()) * 6 * scale; }
  static int text_height(int scale = 1) { return 7 * scale; }

  // An 8-bit RGB PNG (color type 2, no interlace, filter 0 on every row).
  std::vector<uint8_t> encode_png() const;

 private:
  int width_, height_;
  std::vector<uint8_t> rgb_;
};

}  // namespace anvil::nn::train
