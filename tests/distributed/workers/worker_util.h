#pragma once
// Shared by the worker programs that tests start through anvil-run
// (header-only so each worker is one .cpp). Workers print "OK ..." lines and
// exit 0 on success; any failed check prints "FAIL: ..." and exits 1.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/half.h"
#include "core/factory.h"
#include "core/tensor.h"

namespace anvil::test::worker {

// A tensor of `dtype` holding `values` (each exactly representable, or
// rounded as a cast would).
inline Tensor make(DType dtype, const std::vector<double>& values) {
  Tensor t = anvil::empty({static_cast<int64_t>(values.size())}, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    switch (dtype) {
      case DType::Float32:
        t.data<float>()[i] = static_cast<float>(v);
        break;
      case DType::Float64:
        t.data<double>()[i] = v;
        break;
      case DType::Float16:
        t.data<Half>()[i] = Half(static_cast<float>(v));
        break;
      case DType::BFloat16:
        t.data<BFloat16>()[i] = BFloat16(static_cast<float>(v));
        break;
      case DType::Int32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DType::Int64:
        t.data<int64_t>()[i] = static_cast<int64_t>(v);
        break;
      case DType::UInt8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      default:
        throw std::runtime_error("make: unsupported dtype");
    }
  }
  return t;
}

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DType::Float32:
        out[i] = t.data<float>()[i];
        break;
      case DType::Float64:
        out[i] = t.data<double>()[i];
        break;
      case DType::Float16:
        out[i] = static_cast<float>(t.data<Half>()[i]);
        break;
      case DType::BFloat16:
        out[i] = static_cast<float>(t.data<BFloat16>()[i]);
        break;
      case DType::Int32:
        out[i] = t.data<int32_t>()[i];
        break;
      case DType::Int64:
        out[i] = static_cast<double>(t.data<int64_t>()[i]);
        break;
      case DType::UInt8:
        out[i] = t.data<uint8_t>()[i];
        break;
      default:
        throw std::runtime_error("values_of: unsupported dtype");
    }
  }
  return out;
}

// What storing v in dtype gives back (the rounding a result goes through).
inline double round_to(DType dtype, double v) { return values_of(make(dtype, {v}))[0]; }

// Values any rank can recompute for any other rank: integers small enough
// that sums over a few ranks are exact in every dtype (float16 included).
inline std::vector<double> rank_values(uint64_t seed, int rank, DType dtype, size_t n, int salt) {
  std::mt19937_64 gen(seed * 1000003ULL + static_cast<uint64_t>(rank) * 7919ULL +
                      static_cast<uint64_t>(dtype) * 131ULL + static_cast<uint64_t>(salt));
  int lo = -8, hi = 8;
  if (dtype == DType::UInt8) lo = 0, hi = 60;
  if (dtype == DType::Int32 || dtype == DType::Int64) lo = -100000, hi = 100000;
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

inline void expect_close(const std::string& what, DType dtype, const std::vector<double>& got,
                         const std::vector<double>& want) {
  if (got.size() != want.size())
    throw std::runtime_error(what + ": got " + std::to_string(got.size()) + " values, want " +
                             std::to_string(want.size()));
  double rel = 0;
  if (dtype == DType::Float16 || dtype == DType::BFloat16) rel = 1e-2;
  if (dtype == DType::Float32) rel = 1e-6;
  if (dtype == DType::Float64) rel = 1e-12;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = rel * std::abs(want[i]);
    if (!(std::abs(got[i] - want[i]) <= tol)) {
      std::ostringstream os;
      os << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
      throw std::runtime_error(os.str());
    }
  }
}

// "--name value" from argv, or fallback.
inline std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

}  // namespace anvil::test::worker
