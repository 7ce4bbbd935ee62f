#include "nn/data/transforms.h"

#include <algorithm>

#include "core/base/philox.h"
#include "core/ops.h"

namespace anvil::nn::data::transforms {

namespace {

Tensor as_images(const char* op, const Tensor& x) {
  ANVIL_CHECK(x.dim() == 4 && x.dtype() == kFloat32 && x.device().is_cpu(), op,
              ": expected float32 CPU images [N, C, H, W], got ", x.shape_str(), " ", x.dtype(), " ", x.device());
  return x.contiguous();
}

// Uniform draw k for sample i of a batch with this seed.
float draw(uint64_t seed, int64_t sample, int k) {
  return philox::uniform_at(seed, static_cast<uint64_t>(sample) * 4, k);
}

}  // namespace

BatchTransform normalize(std::vector<double> mean, std::vector<double> std) {
  ANVIL_CHECK(mean.size() == std.size() && !mean.empty(), "normalize: mean and std need one value per channel, got ",
              mean.size(), " and ", std.size());
  for (double s : std) ANVIL_CHECK(s > 0, "normalize: std must be positive, got ", s);
  return [mean, std](Example e, uint64_t) {
    int64_t c = static_cast<int64_t>(mean.size());
    ANVIL_CHECK(e.data.dim() >= 2 && e.data.size(1) == c, "normalize: expected ", c, " channels at dim 1, got shape ",
                e.data.shape_str());
    Shape bshape(e.data.dim(), 1);
    bshape[1] = c;
    Tensor m = from_vector(mean, bshape, e.data.dtype()), s = from_vector(std, bshape, e.data.dtype());
    e.data = (e.data - m) / s;
    return e;
  };
}

BatchTransform random_crop(int64_t size, int64_t padding) {
  ANVIL_CHECK(size > 0 && padding >= 0, "random_crop: size must be positive and padding non-negative");
  return [size, padding](Example e, uint64_t seed) {
    Tensor x = as_images("random_crop", e.data);
    int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    int64_t ph = h + 2 * padding, pw = w + 2 * padding;
    ANVIL_CHECK(size <= ph && size <= pw, "random_crop: crop ", size, " is larger than the padded image ", ph, "x", pw);
    Tensor out = zeros({n, c, size, size});
    const float* src = x.data<float>();
    float* dst = out.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      auto top = static_cast<int64_t>(draw(seed, i, 0) * static_cast<float>(ph - size + 1));
      auto left = static_cast<int64_t>(draw(seed, i, 1) * static_cast<float>(pw - size + 1));
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t r = 0; r < size; ++r) {
          int64_t sr = top + r - padding;
          if (sr < 0 || sr >= h) continue;
          for (int64_t q = 0; q < size; ++q) {
            int64_t sc = left + q - padding;
            if (sc >= 0 && sc < w) dst[((i * c + ch) * size + r) * size + q] = src[((i * c + ch) * h + sr) * w + sc];
          }
        }
    }
    e.data = out;
    return e;
  };
}

BatchTransform random_horizontal_flip(double p) {
  ANVIL_CHECK(p >= 0 && p <= 1, "random_horizontal_flip: p must be in [0, 1], got ", p);
  return [p](Example e, uint64_t seed) {
    Tensor x = as_images("random_horizontal_flip", e.data).clone();
    int64_t n = x.size(0), plane = x.size(1) * x.size(2), w = x.size(3);
    float* d = x.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      if (draw(seed, i, 2) >= p) continue;
      for (int64_t r = 0; r < plane; ++r) std::reverse(d + (i * plane + r) * w, d + (i * plane + r + 1) * w);
    }
    e.data = x;
    return e;
  };
}

BatchTransform compose(std::vector<BatchTransform> transforms) {
  return [transforms](Example e, uint64_t seed) {
    for (size_t k = 0; k < transforms.size(); ++k) e = transforms[k](std::move(e), seed * 31u + k);
    return e;
  };
}

}  // namespace anvil::nn::data::transforms
