#include "server/grpc_front/h2_frame_reader.h"

#include <algorithm>
#include <string>

namespace msgq::grpc_front {

std::string H2GoAwayFrame(uint32_t last_stream_id, uint32_t error_code) {
  std::string frame(9 + 8, '\0');
  frame[2] = 8;  // payload length
  frame[3] = static_cast<char>(kH2GoAway);
  // Flags 0, stream 0.
  const uint32_t last = last_stream_id & 0x7fffffffu;
  for (int i = 0; i < 4; ++i) {
    frame[9 + i] = static_cast<char>(last >> (24 - 8 * i));
    frame[13 + i] = static_cast<char>(error_code >> (24 - 8 * i));
  }
  return frame;
}

H2FrameReader::H2FrameReader(Side side)
    : preface_left_(side == Side::kClient
                        ? static_cast<uint32_t>(kH2ClientPreface.size())
                        : 0) {}

absl::Status H2FrameReader::Feed(
    absl::string_view bytes,
    absl::FunctionRef<void(const H2FrameHeader&)> on_header) {
  if (!status_.ok()) return status_;
  while (!bytes.empty()) {
    if (preface_left_ > 0) {
      const size_t at = kH2ClientPreface.size() - preface_left_;
      const size_t n = std::min<size_t>(preface_left_, bytes.size());
      if (bytes.substr(0, n) != kH2ClientPreface.substr(at, n)) {
        status_ =
            absl::InvalidArgumentError("not an HTTP/2 connection preface");
        return status_;
      }
      preface_left_ -= static_cast<uint32_t>(n);
      fed_ += n;
      bytes.remove_prefix(n);
      if (preface_left_ == 0) complete_end_ = fed_;
      continue;
    }
    if (in_payload_) {
      const size_t n = std::min<size_t>(payload_left_, bytes.size());
      payload_left_ -= static_cast<uint32_t>(n);
      fed_ += n;
      bytes.remove_prefix(n);
      if (payload_left_ == 0) {
        in_payload_ = false;
        complete_end_ = fed_;
      }
      continue;
    }
    const size_t n = std::min<size_t>(9 - header_have_, bytes.size());
    std::copy_n(bytes.data(), n, header_ + header_have_);
    header_have_ += static_cast<uint32_t>(n);
    fed_ += n;
    bytes.remove_prefix(n);
    if (header_have_ < 9) continue;
    header_have_ = 0;
    H2FrameHeader h;
    h.length = (uint32_t{header_[0]} << 16) | (uint32_t{header_[1]} << 8) |
               uint32_t{header_[2]};
    h.type = header_[3];
    h.flags = header_[4];
    h.stream_id = ((uint32_t{header_[5]} << 24) | (uint32_t{header_[6]} << 16) |
                   (uint32_t{header_[7]} << 8) | uint32_t{header_[8]}) &
                  0x7fffffffu;
    on_header(h);
    if (h.length == 0) {
      complete_end_ = fed_;
    } else {
      in_payload_ = true;
      payload_left_ = h.length;
    }
  }
  return absl::OkStatus();
}

}  // namespace msgq::grpc_front
