#include "nn/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/factory.h"

namespace anvil::nn::data {

namespace {

// gzopen reads uncompressed files transparently, so one path serves both.
struct GzFile {
  gzFile f;
  explicit GzFile(const std::string& path) : f(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (f) gzclose(f);
  }
};

void read_exact(GzFile& file, void* dst, size_t n, const std::string& path, const char* what) {
  size_t done = 0;
  while (done < n) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    int got = gzread(file.f, static_cast<char*>(dst) + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(file.f, &err);
      fail("read_idx: cannot read ", what, " of '", path, "': ", msg ? msg : "read error");
    }
    ANVIL_CHECK(got > 0, "read_idx: '", path, "' is truncated: expected ", n, " bytes of ", what, ", got ", done + got);
    done += static_cast<size_t>(got);
  }
}

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

}  // namespace

Tensor read_idx(const std::string& path) {
  ANVIL_CHECK(std::filesystem::exists(path), "read_idx: file '", path, "' does not exist");
  GzFile file(path);
  ANVIL_CHECK(file.f != nullptr, "read_idx: cannot open '", path, "'");
  unsigned char magic[4];
  read_exact(file, magic, 4, path, "the header");
  ANVIL_CHECK(magic[0] == 0 && magic[1] == 0, "read_idx: '", path, "' is not an IDX file (bad magic number ",
              int(magic[0]), ",", int(magic[1]), ",", int(magic[2]), ",", int(magic[3]), ")");
  DType dtype;
  size_t elem;
  switch (magic[2]) {
    case 0x08:
      dtype = kUInt8;
      elem = 1;
      break;
    case 0x0C:
      dtype = kInt32;
      elem = 4;
      break;
    case 0x0D:
      dtype = kFloat32;
      elem = 4;
      break;
    case 0x0E:
      dtype = kFloat64;
      elem = 8;
      break;
    default:
      fail("read_idx: '", path, "' has unsupported IDX element type 0x", std::hex, int(magic[2]));
  }
  int rank = magic[3];
  ANVIL_CHECK(rank >= 1 && rank <= 8, "read_idx: '", path, "' has an invalid rank ", rank);
  Shape shape(rank);
  std::vector<unsigned char> dims(4 * static_cast<size_t>(rank));
  read_exact(file, dims.data(), dims.size(), path, "the dimensions");
  for (int d = 0; d < rank; ++d) shape[d] = big_endian(&dims[4 * d]);
  size_t nbytes = elem;
  for (int64_t d : shape)
    ANVIL_CHECK(!__builtin_mul_overflow(nbytes, static_cast<size_t>(d), &nbytes), "read_idx: '", path,
                "' declares dimensions ", shape, " whose data would not fit in memory");
  // The dimensions are only a claim: read the data before trusting them with
  // an allocation, in pieces, so a short or corrupt file fails having taken
  // no more memory than it holds.
  // Pieces grow with what was read (64 KiB, doubling, at most 16 MiB).
  std::vector<unsigned char> data;
  while (data.size() < nbytes) {
    const size_t piece = std::min(std::max(data.size(), size_t{64} << 10), size_t{16} << 20);
    const size_t at = data.size(), n = std::min(piece, nbytes - at);
    data.resize(at + n);
    read_exact(file, data.data() + at, n, path, "the data");
  }
  Tensor out = empty(shape, dtype);
  if (nbytes > 0) std::memcpy(out.data_ptr(), data.data(), nbytes);
  if (elem > 1) {  // IDX data is big-endian
    auto* p = static_cast<unsigned char*>(out.data_ptr());
    for (size_t i = 0; i < nbytes; i += elem) std::reverse(p + i, p + i + elem);
  }
  return out;
}

}  // namespace anvil::nn::data
