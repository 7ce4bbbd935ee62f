#include "nn/train/tensorboard.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "nn/train/output_file.h"

namespace anvil::nn::train {

namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli polynomial
    table[i] = c;
  }
  return table;
}

// The protobuf wire format, as much of it as an Event with a scalar needs.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }
template <class T> void put_fixed(std::string& out, T v) {  // little-endian, as x86 and ARM store it
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event fields: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, 1);
  put_fixed<double>(e, wall_time);
  put_key(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& log_dir) {
  ensure_writable_directory(log_dir, "TensorBoard log directory");
  static std::atomic<int> counter{0};
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const auto seconds = static_cast<long long>(now_seconds());
  path_ = (std::filesystem::path(log_dir) / ("events.out.tfevents." + std::to_string(seconds) + "." + host + "." +
                                             std::to_string(getpid()) + "." + std::to_string(counter++)))
              .string();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  ANVIL_CHECK(out_.good(), "TensorBoardWriter: cannot open '", path_, "' for writing");
  std::string first = event_header(now_seconds(), 0);
  put_bytes(first, 3, "brain.Event:2");
  write_event(first);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  add_scalar(tag, value, step, now_seconds());
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  std::string v;  // Summary.Value: tag = 1, simple_value = 2 (float)
  put_bytes(v, 1, tag);
  put_key(v, 2, 5);
  put_fixed<float>(v, static_cast<float>(value));
  std::string summary;  // Summary: value = 1 (repeated)
  put_bytes(summary, 1, v);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  write_event(e);
}

void TensorBoardWriter::write_event(const std::string& event) {
  std::string header;
  put_fixed<uint64_t>(header, event.size());
  std::string record = header;
  put_fixed<uint32_t>(record, masked_crc32c(header));
  record += event;
  put_fixed<uint32_t>(record, masked_crc32c(event));
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  out_.flush();  // TensorBoard reads while training runs; a crash keeps what was logged
  ANVIL_CHECK(out_.good(), "TensorBoardWriter: writing '", path_, "' failed");
}

}  // namespace anvil::nn::train
