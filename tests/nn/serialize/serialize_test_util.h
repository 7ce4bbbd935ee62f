#pragma once
// Helpers for the serialize tests: a scratch folder per test, file bytes,
// and a tensor's values as raw bytes read through its strides (independent of
// contiguous() and the copy kernels the writer uses).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/ops.h"

namespace anvil::nn::serialize::test {

namespace fs = std::filesystem;

inline fs::path fixture(const std::string& name) { return fs::path(__FILE__).parent_path() / "fixtures" / name; }

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << p;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The message of the anvil::Error `f` throws, or "" if it throws none.
template <typename F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A tensor's elements in logical (row-major) order as bytes, walking its
// strides over the storage. CPU tensors only.
inline std::string logical_bytes(const Tensor& t) {
  const size_t item = t.itemsize();
  const auto* base = static_cast<const char*>(t.storage()->data) + t.offset() * static_cast<int64_t>(item);
  std::string out;
  const int64_t n = t.numel();
  std::vector<int64_t> index(t.dim(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += index[d] * t.strides()[d];
    out.append(base + off * static_cast<int64_t>(item), item);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A CPU tensor holding exactly these bytes (values given in the dtype's
// storage type: uint16_t bits for F16/BF16, uint8_t for BOOL).
template <typename T> Tensor raw_tensor(const Shape& shape, DType dtype, const std::vector<T>& values) {
  EXPECT_EQ(sizeof(T), itemsize(dtype));
  Tensor t = empty(shape, dtype);
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return t;
}

template <typename T> std::vector<T> raw_values(const Tensor& t) {
  EXPECT_EQ(sizeof(T), t.itemsize());
  std::vector<T> out(static_cast<size_t>(t.numel()));
  const std::string bytes = logical_bytes(t);
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// A fresh folder per test, removed afterwards.
class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("anvil_serialize_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& name) const { return dir_ / name; }
  // Everything in the folder, to prove no temporary file was left behind.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

}  // namespace anvil::nn::serialize::test
