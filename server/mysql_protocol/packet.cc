#include "server/mysql_protocol/packet.h"

#include "absl/strings/str_cat.h"

namespace msgq::mysql_protocol {

void AppendInt1(std::string& out, uint8_t v) { out.push_back(char(v)); }

void AppendInt2(std::string& out, uint16_t v) {
  out.push_back(char(v & 0xFF));
  out.push_back(char(v >> 8));
}

void AppendInt3(std::string& out, uint32_t v) {
  for (int i = 0; i < 3; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
}

void AppendInt4(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
}

void AppendLenEncInt(std::string& out, uint64_t v) {
  if (v < 251) {
    out.push_back(char(v));
  } else if (v < (1u << 16)) {
    out.push_back(char(0xFC));
    AppendInt2(out, uint16_t(v));
  } else if (v < (1u << 24)) {
    out.push_back(char(0xFD));
    AppendInt3(out, uint32_t(v));
  } else {
    out.push_back(char(0xFE));
    for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
  }
}

void AppendLenEncString(std::string& out, absl::string_view s) {
  AppendLenEncInt(out, s.size());
  out.append(s.data(), s.size());
}

void AppendNulString(std::string& out, absl::string_view s) {
  out.append(s.data(), s.size());
  out.push_back('\0');
}

std::string Frame(uint8_t& seq, absl::string_view payload) {
  std::string out;
  out.reserve(payload.size() + kHeaderBytes);
  while (true) {
    const size_t n = std::min(payload.size(), kMaxPayloadPerPacket);
    AppendInt3(out, uint32_t(n));
    AppendInt1(out, seq++);
    out.append(payload.data(), n);
    payload.remove_prefix(n);
    if (n < kMaxPayloadPerPacket) return out;
  }
}

absl::StatusOr<std::optional<Packet>> ParsePacket(absl::string_view buffer,
                                                  size_t max_payload,
                                                  size_t* consumed) {
  *consumed = 0;
  if (buffer.size() < kHeaderBytes) return std::nullopt;
  const auto* b = reinterpret_cast<const uint8_t*>(buffer.data());
  const size_t length = size_t{b[0]} | size_t{b[1]} << 8 | size_t{b[2]} << 16;
  if (length == kMaxPayloadPerPacket || length > max_payload) {
    return absl::ResourceExhaustedError(
        absl::StrCat("packet of ", length, " bytes; at most ", max_payload,
                     " are accepted (no continued 16 MiB packets)"));
  }
  if (buffer.size() < kHeaderBytes + length) return std::nullopt;
  Packet p;
  p.seq = b[3];
  p.payload.assign(buffer.data() + kHeaderBytes, length);
  *consumed = kHeaderBytes + length;
  return p;
}

bool PayloadReader::ReadBytes(size_t n, absl::string_view& s) {
  if (rest_.size() < n) {
    rest_ = {};
    return false;
  }
  s = rest_.substr(0, n);
  rest_.remove_prefix(n);
  return true;
}

bool PayloadReader::Skip(size_t n) {
  absl::string_view ignored;
  return ReadBytes(n, ignored);
}

namespace {
uint64_t LittleEndian(absl::string_view s) {
  uint64_t v = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    v |= uint64_t{static_cast<uint8_t>(s[i])} << (8 * i);
  }
  return v;
}
}  // namespace

bool PayloadReader::ReadInt1(uint8_t& v) {
  absl::string_view s;
  if (!ReadBytes(1, s)) return false;
  v = static_cast<uint8_t>(s[0]);
  return true;
}

bool PayloadReader::ReadInt2(uint16_t& v) {
  absl::string_view s;
  if (!ReadBytes(2, s)) return false;
  v = static_cast<uint16_t>(LittleEndian(s));
  return true;
}

bool PayloadReader::ReadInt4(uint32_t& v) {
  absl::string_view s;
  if (!ReadBytes(4, s)) return false;
  v = static_cast<uint32_t>(LittleEndian(s));
  return true;
}

bool PayloadReader::ReadLenEncInt(uint64_t& v) {
  uint8_t first = 0;
  if (!ReadInt1(first)) return false;
  size_t width = 0;
  switch (first) {
    case 0xFC:
      width = 2;
      break;
    case 0xFD:
      width = 3;
      break;
    case 0xFE:
      width = 8;
      break;
    case 0xFB:
    case 0xFF:
      rest_ = {};
      return false;
    default:
      v = first;
      return true;
  }
  absl::string_view s;
  if (!ReadBytes(width, s)) return false;
  v = LittleEndian(s);
  return true;
}

bool PayloadReader::ReadLenEncString(absl::string_view& s) {
  uint64_t n = 0;
  if (!ReadLenEncInt(n)) return false;
  if (n > rest_.size()) {
    rest_ = {};
    return false;
  }
  return ReadBytes(static_cast<size_t>(n), s);
}

bool PayloadReader::ReadNulString(absl::string_view& s) {
  const size_t nul = rest_.find('\0');
  if (nul == absl::string_view::npos) {
    rest_ = {};
    return false;
  }
  s = rest_.substr(0, nul);
  rest_.remove_prefix(nul + 1);
  return true;
}

std::string OkPayload() {
  std::string out;
  AppendInt1(out, 0x00);
  AppendLenEncInt(out, 0);  // affected rows
  AppendLenEncInt(out, 0);  // last insert id
  AppendInt2(out, kServerStatusAutocommit);
  AppendInt2(out, 0);  // warnings
  return out;
}

std::string EofPayload() {
  std::string out;
  AppendInt1(out, 0xFE);
  AppendInt2(out, 0);  // warnings
  AppendInt2(out, kServerStatusAutocommit);
  return out;
}

std::string ErrPayload(uint16_t code, absl::string_view sql_state,
                       absl::string_view message) {
  std::string out;
  AppendInt1(out, 0xFF);
  AppendInt2(out, code);
  out.push_back('#');
  std::string state(sql_state.substr(0, 5));
  state.resize(5, '0');
  out += state;
  out.append(message.data(), message.size());
  return out;
}

}  // namespace msgq::mysql_protocol
