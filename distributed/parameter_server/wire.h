#pragma once
/// @file
/// The PS <-> worker protocol: length-prefixed frames over one TCP connection
/// per (worker, PS) pair, request then reply. Point-to-point rather than
/// collectives, because a collective cannot finish once a member is dead,
/// while a PS must carry on when a worker vanishes.
///
/// A frame is a 32-byte header and a payload. Every read is bounded by a
/// deadline and every payload length is checked against what that frame type
/// may carry *before* anything is allocated, so a worker that dies or lies
/// mid-message costs the server one dropped connection, never a hang or a
/// huge allocation. Floats travel in the host's byte order (the ranks of one
/// job share an architecture, as with Gloo).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace anvil::distributed::ps {

using Clock = std::chrono::steady_clock;  ///< The clock deadlines are measured on.

inline constexpr uint32_t kMagic = 0x31535041;  ///< "APS1"

/// What a frame asks or answers (see each value).
enum class FrameType : uint32_t {
  Hello = 1,  ///< worker -> PS: arg = worker id, version = layout fingerprint
  Welcome = 2,  ///< PS -> worker: version = current version, arg = shard elements
  Pull = 3,  ///< worker -> PS
  Params = 4,  ///< PS -> worker: version, payload = the shard (float32)
  Push = 5,  ///< worker -> PS: version = the version its gradient was computed at, payload = gradient
  Applied = 6,  ///< PS -> worker: version = the version after the update, arg = its staleness
  Stale = 7,  ///< PS -> worker (async): not applied, arg = staleness; pull and compute again
  Bye = 8,  ///< worker -> PS: this worker is done; reply Applied
  Error = 9,  ///< PS -> worker: payload = the reason (text); the connection closes
};

/// A frame's header as it travels: 32 bytes.
struct FrameHeader {
  uint32_t magic = kMagic;  ///< kMagic, checked on receipt
  uint32_t type = 0;  ///< a FrameType
  uint64_t version = 0;  ///< the parameter version the frame refers to
  uint64_t arg = 0;  ///< the type's argument (worker id, staleness, shard elements)
  uint64_t payload_bytes = 0;  ///< bytes of payload after the header
};
static_assert(sizeof(FrameHeader) == 32);

/// A frame as received.
struct Frame {
  FrameType type{};  ///< what it asks or answers
  uint64_t version = 0;  ///< the parameter version it refers to
  uint64_t arg = 0;  ///< the type's argument
  std::vector<uint8_t> payload;  ///< the payload, checked against max_payload_bytes
};

const char* frame_type_name(FrameType t);  ///< "Hello", "Push", ...

/// The most payload bytes a frame of this type may carry on a connection
/// whose shard has `shard_numel` elements (errors: 64 KiB of text).
uint64_t max_payload_bytes(FrameType t, int64_t shard_numel);

/// Sends a whole frame; false when the peer is gone or the deadline passed.
bool send_frame(int fd, FrameType type, uint64_t version, uint64_t arg, const void* payload, uint64_t bytes,
                Clock::time_point deadline);

/// How a receive ended: a frame, a closed connection, a deadline, or a malformed frame.
enum class RecvStatus { Ok, Closed, TimedOut, Invalid };
/// What recv_frame returns.
struct RecvResult {
  RecvStatus status = RecvStatus::Ok;  ///< Ok when a frame arrived
  std::string why;  ///< for Invalid, Closed and TimedOut: what happened
};
/// Waits for a header until `header_deadline`, then the rest of the frame must
/// arrive within `message_timeout`. Invalid: bad magic, unknown type, or a
/// payload larger than max_payload_bytes(type, shard_numel).
RecvResult recv_frame(int fd, Frame* out, int64_t shard_numel, Clock::time_point header_deadline,
                      std::chrono::milliseconds message_timeout);

}  // namespace anvil::distributed::ps
