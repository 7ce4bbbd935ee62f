// IDX reading: a file written here (plain and gzip) reads back exactly; bad
// files give clear errors; the Debian Fashion-MNIST package loads.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/ops.h"
#include "nn/data/dataset.h"
#include "nn/data/idx.h"

namespace anvil::nn::data {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("anvil_idx_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<unsigned char> idx_bytes(unsigned char type, const std::vector<uint32_t>& dims,
                                     const std::vector<unsigned char>& payload) {
  std::vector<unsigned char> b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(d >> s));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

void write_plain(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

TEST(Idx, ReadsUint8AndInt32FilesPlainAndGzipped) {
  std::vector<unsigned char> pixels(2 * 3 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<unsigned char>(i * 7 % 256);
  std::string p = temp_path("u8.gz");
  write_gz(p, idx_bytes(0x08, {2, 3, 4}, pixels));
  Tensor t = read_idx(p);
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.dtype(), kUInt8);
  EXPECT_EQ(t.to_vector<uint8_t>(), pixels);
  std::remove(p.c_str());

  // int32 values are big-endian in the file.
  std::vector<unsigned char> be = {0x00, 0x00, 0x01, 0x02, 0xff, 0xff, 0xff, 0xfe};
  std::string q = temp_path("i32");
  write_plain(q, idx_bytes(0x0C, {2}, be));
  EXPECT_EQ(read_idx(q).to_vector<int32_t>(), (std::vector<int32_t>{258, -2}));
  std::remove(q.c_str());
}

TEST(Idx, BadFilesGiveClearErrors) {
  auto expect_error = [](const std::string& path, const std::string& needle) {
    try {
      read_idx(path);
      ADD_FAILURE() << "expected an error for " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("/nonexistent/file.gz", "does not exist");
  std::string bad_magic = temp_path("magic");
  write_plain(bad_magic, {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1, 5});
  expect_error(bad_magic, "magic");
  std::string truncated = temp_path("trunc.gz");
  write_gz(truncated, idx_bytes(0x08, {10, 10}, std::vector<unsigned char>(37, 1)));
  expect_error(truncated, "truncated");
  // Dimensions whose product overflows (found by fuzz/fuzz_idx.cpp), and a
  // claim of 4 GB of data in a 20-byte file: errors, with no allocation.
  std::string huge = temp_path("huge");
  write_plain(huge, idx_bytes(0x0D, {0x254a6f94u, 0xffffffffu, 0xffffffffu}, {1, 2, 3}));
  expect_error(huge, "would not fit in memory");
  std::string empty_huge = temp_path("empty_huge");
  write_plain(empty_huge, idx_bytes(0x08, {0, 0x7fffffffu, 0x7fffffffu, 0x7fffffffu}, {}));
  expect_error(empty_huge, "strides overflow");
  std::remove(empty_huge.c_str());
  std::string claims = temp_path("claims.gz");
  write_gz(claims, idx_bytes(0x08, {65536, 65536}, std::vector<unsigned char>(20, 1)));
  expect_error(claims, "truncated");
  std::remove(bad_magic.c_str());
  std::remove(truncated.c_str());
  std::remove(huge.c_str());
  std::remove(claims.c_str());
}

TEST(Idx, FashionMnistPackageLoads) {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto test = idx_image_dataset(kFashionMnistDir, "test");
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(test->data().shape(), (Shape{10000, 1, 28, 28}));
  auto labels = test->targets().to_vector<int64_t>();
  std::vector<int> counts(10, 0);
  for (auto l : labels) {
    ASSERT_TRUE(l >= 0 && l < 10);
    counts[l]++;
  }
  for (int c : counts) EXPECT_EQ(c, 1000);  // the test split is balanced
  EXPECT_LE(test->data().max().item<float>(), 1.0f);
  EXPECT_THROW(idx_image_dataset(kFashionMnistDir, "valid"), Error);
}

}  // namespace
}  // namespace anvil::nn::data
