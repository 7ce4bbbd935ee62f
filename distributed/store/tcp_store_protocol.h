#pragma once
// The TCPStore wire format (internal). Every message, both ways, is a
// little-endian u32 length then that many payload bytes. A request payload is
// a command byte then its fields; strings and byte blobs are a u32 length
// then the bytes, integers are 8 little-endian bytes.
//   SET   key value      -> u8 1
//   GET   key            -> value            (answered once the key exists)
//   ADD   key i64        -> i64 new value
//   CHECK n key...       -> u8 0/1
//   WAIT  n key...       -> u8 1             (answered once all keys exist)
// SET and ADD answer u8 0 (then close) when the store is over its byte limit.
//   HELLO token          -> u8 1 accepted / u8 0 wrong token (then closed)
// A client's first message is HELLO; the server answers nothing else first.
// Sizes are bounded on both sides so a hostile peer cannot make the other
// allocate without limit.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "distributed/store/store.h"

namespace anvil::distributed::wire {

enum Command : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5, kHello = 6 };

constexpr uint32_t kMaxMessage = 256u << 20;  // one frame, either way
constexpr uint32_t kMaxKey = 4096;  // bytes in one key

inline void put_u32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_i64(Bytes& b, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(u >> (8 * i)));
}
inline void put_blob(Bytes& b, const void* p, size_t n) {
  put_u32(b, static_cast<uint32_t>(n));
  auto c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}
inline void put_string(Bytes& b, const std::string& s) { put_blob(b, s.data(), s.size()); }

// Reads fields from a payload; running past the end is a protocol error.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() {
    need(1);
    return p_[i_++];
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(p_[i_ + k]) << (8 * k);
    i_ += 4;
    return v;
  }
  int64_t i64() {
    need(8);
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(p_[i_ + k]) << (8 * k);
    i_ += 8;
    return static_cast<int64_t>(v);
  }
  Bytes blob() {
    uint32_t n = u32();
    need(n);
    Bytes b(p_ + i_, p_ + i_ + n);
    i_ += n;
    return b;
  }
  std::string string() {
    Bytes b = blob();
    return {b.begin(), b.end()};
  }
  // A key: a string no longer than kMaxKey.
  std::string key() {
    std::string k = string();
    ANVIL_CHECK(k.size() <= kMaxKey, "TCPStore: key of ", k.size(), " bytes exceeds the limit of ", kMaxKey);
    return k;
  }

 private:
  void need(size_t k) { ANVIL_CHECK(i_ + k <= n_, "TCPStore: malformed message (truncated)"); }
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

}  // namespace anvil::distributed::wire
