#include "distributed/parameter_server/wire.h"

#include <cstring>

#include "distributed/net/socket.h"

namespace anvil::distributed::ps {

const char* frame_type_name(FrameType t) {
  switch (t) {
    case FrameType::Hello:
      return "HELLO";
    case FrameType::Welcome:
      return "WELCOME";
    case FrameType::Pull:
      return "PULL";
    case FrameType::Params:
      return "PARAMS";
    case FrameType::Push:
      return "PUSH";
    case FrameType::Applied:
      return "APPLIED";
    case FrameType::Stale:
      return "STALE";
    case FrameType::Bye:
      return "BYE";
    case FrameType::Error:
      return "ERROR";
  }
  return "?";
}

uint64_t max_payload_bytes(FrameType t, int64_t shard_numel) {
  const uint64_t shard_bytes = static_cast<uint64_t>(shard_numel) * sizeof(float);
  switch (t) {
    case FrameType::Params:
    case FrameType::Push:
      return shard_bytes;
    case FrameType::Error:
      return 64 * 1024;
    default:
      return 0;
  }
}

bool send_frame(int fd, FrameType type, uint64_t version, uint64_t arg, const void* payload, uint64_t bytes,
                Clock::time_point deadline) {
  FrameHeader h;
  h.type = static_cast<uint32_t>(type);
  h.version = version;
  h.arg = arg;
  h.payload_bytes = bytes;
  if (!net::send_all(fd, &h, sizeof h, deadline)) return false;
  return bytes == 0 || net::send_all(fd, payload, bytes, deadline);
}

RecvResult recv_frame(int fd, Frame* out, int64_t shard_numel, Clock::time_point header_deadline,
                      std::chrono::milliseconds message_timeout) {
  FrameHeader h;
  bool timed_out = false;
  // The first byte may be long in coming (a worker computing); once it is
  // here, the rest of the frame is owed within message_timeout.
  if (!net::recv_all(fd, &h, 1, header_deadline, &timed_out))
    return {timed_out ? RecvStatus::TimedOut : RecvStatus::Closed,
            timed_out ? "silent past its timeout" : "connection closed"};
  const auto rest_deadline = Clock::now() + message_timeout;
  if (!net::recv_all(fd, reinterpret_cast<char*>(&h) + 1, sizeof h - 1, rest_deadline, &timed_out))
    return {timed_out ? RecvStatus::TimedOut : RecvStatus::Closed,
            timed_out ? "stopped in the middle of a frame header" : "closed in the middle of a frame header"};
  if (h.magic != kMagic) return {RecvStatus::Invalid, "not a parameter-server frame (bad magic)"};
  if (h.type < static_cast<uint32_t>(FrameType::Hello) || h.type > static_cast<uint32_t>(FrameType::Error))
    return {RecvStatus::Invalid, "unknown frame type " + std::to_string(h.type)};
  const auto type = static_cast<FrameType>(h.type);
  const uint64_t limit = max_payload_bytes(type, shard_numel);
  if (h.payload_bytes > limit)
    return {RecvStatus::Invalid, std::string(frame_type_name(type)) + " frame of " + std::to_string(h.payload_bytes) +
                                     " payload bytes (at most " + std::to_string(limit) + " allowed)"};
  out->type = type;
  out->version = h.version;
  out->arg = h.arg;
  out->payload.resize(static_cast<size_t>(h.payload_bytes));
  if (h.payload_bytes > 0 && !net::recv_all(fd, out->payload.data(), out->payload.size(), rest_deadline, &timed_out))
    return {
        timed_out ? RecvStatus::TimedOut : RecvStatus::Closed,
        std::string(timed_out ? "stopped" : "closed") + " in the middle of a " + frame_type_name(type) + " payload"};
  return {};
}

}  // namespace anvil::distributed::ps
