// Random fills and dropout with Philox (core/base/philox.h). Element i is the
// row-major (logical) index of the element in the output's shape, not its
// memory offset, so a strided output gets the same numbers as a contiguous one
// and every backend agrees for the same seed and offset.
#include <cmath>
#include <type_traits>

#include "core/base/error.h"
#include "core/base/philox.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/random_kernels.h"
#include "kernels/cpu/strided_loop.h"

namespace anvil::cpu {
namespace {

// Uniforms for consecutive indices: one Philox block serves four elements.
class UniformStream {
 public:
  UniformStream(uint64_t seed, uint64_t offset) : seed_(seed), offset_(offset) {}
  float at(uint64_t i) {
    const uint64_t counter = offset_ + i / 4;
    if (!valid_ || counter != counter_) {
      block_ = philox::philox4x32(seed_, counter);
      counter_ = counter;
      valid_ = true;
    }
    return philox::to_uniform(philox::lane(block_, static_cast<int>(i % 4)));
  }

 private:
  uint64_t seed_, offset_, counter_ = 0;
  bool valid_ = false;
  philox::Uint4 block_{};
};

// Philox costs a few dozen operations per element.
constexpr int64_t kCostPerElement = 16;

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The 16-bit float just below finite x (sign-magnitude bits).
template <typename T> T next_below(T x) {
  T r = x;
  if ((x.bits & 0x7fff) == 0)
    r.bits = 0x8001;  // below zero: the smallest negative subnormal
  else
    r.bits = (x.bits & 0x8000) ? x.bits + 1 : x.bits - 1;
  return r;
}

// a + (b - a) * u in T, kept below b when rounding to T would reach it.
template <typename T> T uniform_value(double a, double b, float u) {
  const double v = a + (b - a) * static_cast<double>(u);
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::floor(v));  // randint: [a, b) with integer a, b
  } else if constexpr (std::is_floating_point_v<T>) {
    const T t = static_cast<T>(v);
    return t >= static_cast<T>(b) && b > a ? std::nextafter(static_cast<T>(b), static_cast<T>(a)) : t;
  } else {
    // float16/bfloat16 round values within half a step of b up to b.
    const T t = T(static_cast<float>(v));
    const T tb = T(static_cast<float>(b));
    return static_cast<float>(t) >= static_cast<float>(tb) && b > a ? next_below(tb) : t;
  }
}

}  // namespace

void random(const View& out, const RandomParams& p) {
  const bool normal = p.kind == RandomKind::Normal;
  StridedLoop<1> loop({&out});
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      fail("random: not supported for dtype bool");
    } else if constexpr (!is_float_v<T>) {
      ANVIL_CHECK(!normal, "random normal: not supported for dtype ", out.dtype, " (floating dtypes only)");
      loop.run_parallel(
          {static_cast<char*>(out.data)},
          [&](const StridedLoop<1>::Run& r) {
            UniformStream uniform(p.seed, p.offset);
            for (int64_t j = 0; j < r.n; ++j)
              *reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]) = uniform_value<T>(p.a, p.b, uniform.at(r.first + j));
          },
          kCostPerElement);
    } else if (normal) {
      loop.run_parallel(
          {static_cast<char*>(out.data)},
          [&](const StridedLoop<1>::Run& r) {
            for (int64_t j = 0; j < r.n; ++j) {
              const double z = philox::normal_at(p.seed, p.offset, static_cast<uint64_t>(r.first + j));
              *reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]) = cast_value<T>(p.a + p.b * z);
            }
          },
          kCostPerElement);
    } else {
      loop.run_parallel(
          {static_cast<char*>(out.data)},
          [&](const StridedLoop<1>::Run& r) {
            UniformStream uniform(p.seed, p.offset);
            for (int64_t j = 0; j < r.n; ++j)
              *reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]) = uniform_value<T>(p.a, p.b, uniform.at(r.first + j));
          },
          kCostPerElement);
    }
  });
}

void dropout(const View& out, const View& mask, const View& in, double p, uint64_t seed, uint64_t offset) {
  ANVIL_CHECK(out.shape == in.shape && mask.shape == in.shape, "dropout: shapes differ: out ", out.shape, ", mask ",
              mask.shape, ", in ", in.shape);
  ANVIL_CHECK(out.dtype == in.dtype, "dropout: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  ANVIL_CHECK(mask.dtype == kUInt8 || mask.dtype == kBool, "dropout: mask dtype must be uint8, got ", mask.dtype);
  ANVIL_CHECK(p >= 0 && p <= 1, "dropout: probability must be in [0, 1], got ", p);
  StridedLoop<3> loop({&out, &mask, &in});
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!is_float_v<T>) {
      fail("dropout: not supported for dtype ", in.dtype, " (floating dtypes only)");
    } else {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C scale = C(1.0 / (1.0 - p));  // inf when p == 1, but then nothing is kept
      loop.run_parallel(
          {static_cast<char*>(out.data), static_cast<char*>(mask.data), static_cast<char*>(in.data)},
          [&](const StridedLoop<3>::Run& r) {
            UniformStream uniform(seed, offset);
            for (int64_t j = 0; j < r.n; ++j) {
              const bool keep = static_cast<double>(uniform.at(r.first + j)) >= p;
              const C x = C(*reinterpret_cast<const T*>(r.ptr[2] + j * r.stride[2]));
              *reinterpret_cast<T*>(r.ptr[0] + j * r.stride[0]) = T(keep ? x * scale : C(0));
              *reinterpret_cast<uint8_t*>(r.ptr[1] + j * r.stride[1]) = keep ? 1 : 0;
            }
          },
          kCostPerElement);
    }
  });
}

ANVIL_REGISTER_KERNEL(kernel::Dropout, CPU, dropout);
ANVIL_REGISTER_KERNEL(kernel::Random, CPU, random);

}  // namespace anvil::cpu
