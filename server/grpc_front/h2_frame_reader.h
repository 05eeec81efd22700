// H2FrameReader: follows one direction of an HTTP/2 connection (RFC 9113)
// as its bytes pass through msgqd's gRPC front (grpc_front.h), without
// copying or decoding payloads: it finds each frame's 9-byte header and
// knows where the last whole frame ends.
//
// The client's direction starts with the 24-byte connection preface
// ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); the server's starts with a frame.
// Frame lengths are taken as they come (up to 2^24 - 1): the receiver
// (gRPC) enforces its SETTINGS_MAX_FRAME_SIZE.
//
// Example:
//   H2FrameReader reader(H2FrameReader::Side::kClient);
//   absl::Status s = reader.Feed(bytes, [&](const H2FrameHeader& h) {
//     if (h.type == kH2RstStream) ++resets;
//   });
//   if (!s.ok()) ...  // not HTTP/2: close the connection
//
// Thread-safety: none; one reader per direction of one connection.
#ifndef MSGQ_SERVER_GRPC_FRONT_H2_FRAME_READER_H_
#define MSGQ_SERVER_GRPC_FRONT_H2_FRAME_READER_H_

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace msgq::grpc_front {

inline constexpr uint8_t kH2Data = 0x0;
inline constexpr uint8_t kH2Headers = 0x1;
inline constexpr uint8_t kH2RstStream = 0x3;
inline constexpr uint8_t kH2Settings = 0x4;
inline constexpr uint8_t kH2GoAway = 0x7;
// GOAWAY error codes (RFC 9113 section 7).
inline constexpr uint32_t kH2EnhanceYourCalm = 0xb;

inline constexpr absl::string_view kH2ClientPreface =
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct H2FrameHeader {
  uint32_t length = 0;  // of the payload
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream_id = 0;  // the reserved bit cleared
};

// The bytes of a GOAWAY frame naming `last_stream_id` and `error_code`,
// with no debug data.
std::string H2GoAwayFrame(uint32_t last_stream_id, uint32_t error_code);

class H2FrameReader {
 public:
  enum class Side { kClient, kServer };

  explicit H2FrameReader(Side side);

  // Reads `bytes` (the next bytes of the direction) and calls `on_header`
  // for each frame header completed in them, in order. INVALID_ARGUMENT
  // "not an HTTP/2 connection preface" when the client's first 24 bytes
  // are not the preface; after an error every Feed returns it again.
  absl::Status Feed(absl::string_view bytes,
                    absl::FunctionRef<void(const H2FrameHeader&)> on_header);

  // Bytes fed so far.
  uint64_t fed() const { return fed_; }
  // The offset just past the last whole frame (or the preface) fed: every
  // byte before it belongs to a complete frame. Equal to fed() when the
  // bytes fed end on a frame boundary.
  uint64_t complete_end() const { return complete_end_; }

 private:
  absl::Status status_;
  uint64_t fed_ = 0;
  uint64_t complete_end_ = 0;
  // Preface bytes still to read (client side only).
  uint32_t preface_left_;
  // Header bytes collected of the frame being read (0..9), then its
  // payload bytes still to pass.
  uint8_t header_[9] = {};
  uint32_t header_have_ = 0;
  uint32_t payload_left_ = 0;
  bool in_payload_ = false;
};

}  // namespace msgq::grpc_front

#endif  // MSGQ_SERVER_GRPC_FRONT_H2_FRAME_READER_H_
