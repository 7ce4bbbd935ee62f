#include "nn/layers/upsample.h"

#include <sstream>

namespace anvil::nn {

namespace {
const char* mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Nearest:
      return "nearest";
    case InterpolateMode::Linear:
      return "linear";
    case InterpolateMode::Bilinear:
      return "bilinear";
  }
  return "?";
}
}  // namespace

Upsample::Upsample(const UpsampleOptions& o) : Module("Upsample"), options(o) {
  ANVIL_CHECK(o.size.empty() != o.scale_factor.empty(), "Upsample: expected exactly one of size and scale_factor, got ",
              o.size.size(), " sizes and ", o.scale_factor.size(), " scale factors");
}

Tensor Upsample::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() >= 3, "Upsample: expected input [N, C, *spatial] (3 to 5 dims), got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  InterpolateOptions o;
  o.size = options.size;
  o.scale_factor = options.scale_factor;
  o.mode = options.mode;
  o.align_corners = options.align_corners;
  return interpolate(x, o);
}

std::string Upsample::extra_repr() const {
  std::ostringstream os;
  if (!options.size.empty()) {
    os << "size=(";
    for (size_t i = 0; i < options.size.size(); ++i) os << (i ? ", " : "") << options.size[i];
    os << ")";
  } else {
    os << "scale_factor=";
    if (options.scale_factor.size() == 1)
      os << options.scale_factor[0];
    else {
      os << "(";
      for (size_t i = 0; i < options.scale_factor.size(); ++i) os << (i ? ", " : "") << options.scale_factor[i];
      os << ")";
    }
  }
  os << ", mode='" << mode_name(options.mode) << "'";
  return os.str();
}

PixelShuffle::PixelShuffle(int64_t r) : Module("PixelShuffle"), upscale_factor(r) {
  ANVIL_CHECK(r >= 1, "PixelShuffle: expected upscale_factor >= 1, got ", r);
}

Tensor PixelShuffle::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() >= 3 && x.size(-3) % (upscale_factor * upscale_factor) == 0,
              "PixelShuffle: expected input [*, C * ", upscale_factor * upscale_factor, ", H, W], got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  return pixel_shuffle(x, upscale_factor);
}

PixelUnshuffle::PixelUnshuffle(int64_t r) : Module("PixelUnshuffle"), downscale_factor(r) {
  ANVIL_CHECK(r >= 1, "PixelUnshuffle: expected downscale_factor >= 1, got ", r);
}

Tensor PixelUnshuffle::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() >= 3 && x.size(-1) % downscale_factor == 0 && x.size(-2) % downscale_factor == 0,
              "PixelUnshuffle: expected input [*, C, H, W] with H and W divisible by ", downscale_factor, ", got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  return pixel_unshuffle(x, downscale_factor);
}

}  // namespace anvil::nn
