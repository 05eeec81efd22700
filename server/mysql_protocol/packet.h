// The MySQL client/server protocol's wire primitives: fixed and
// length-encoded integers and strings, the packet header (3-byte little
// endian payload length + 1-byte sequence id), and the generic OK, ERR and
// EOF packets (protocol 4.1, without CLIENT_DEPRECATE_EOF).
//
// msgq's MySQL-protocol server (server/mysql_protocol/) uses these to speak
// to the `mariadb` client and client libraries. Pure functions and a reader
// over caller-owned bytes: thread-compatible, no I/O.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_PACKET_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_PACKET_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq::mysql_protocol {

// A payload of exactly this length means "continued in the next packet"
// (payloads of 16 MiB and more). msgq refuses such packets from clients.
inline constexpr size_t kMaxPayloadPerPacket = 0xFFFFFF;
inline constexpr size_t kHeaderBytes = 4;

void AppendInt1(std::string& out, uint8_t v);
void AppendInt2(std::string& out, uint16_t v);
void AppendInt3(std::string& out, uint32_t v);
void AppendInt4(std::string& out, uint32_t v);
void AppendLenEncInt(std::string& out, uint64_t v);
void AppendLenEncString(std::string& out, absl::string_view s);
void AppendNulString(std::string& out, absl::string_view s);

// Header(s) + payload, ready to write. A payload of 16 MiB - 1 or more is
// split as the protocol requires (the last piece shorter than 16 MiB - 1,
// possibly empty); `seq` is advanced by the number of packets written.
std::string Frame(uint8_t& seq, absl::string_view payload);

struct Packet {
  uint8_t seq = 0;
  std::string payload;
};

// Parses one packet from the front of `buffer`. nullopt: not complete yet
// (read more). On success `*consumed` is the bytes the packet took.
// RESOURCE_EXHAUSTED when the header announces more than `max_payload`
// bytes or a continued (16 MiB) payload: the caller answers ERR 1153 and
// closes, as the rest of the stream cannot be trusted.
absl::StatusOr<std::optional<Packet>> ParsePacket(absl::string_view buffer,
                                                  size_t max_payload,
                                                  size_t* consumed);

// Reads fields from a payload. Each Read* returns false (and leaves the
// reader failed) when the payload is too short; nothing reads past it.
class PayloadReader {
 public:
  explicit PayloadReader(absl::string_view payload) : rest_(payload) {}

  bool ReadInt1(uint8_t& v);
  bool ReadInt2(uint16_t& v);
  bool ReadInt4(uint32_t& v);
  // 0xFB (NULL) and 0xFF (ERR marker) are not valid length-encoded ints.
  bool ReadLenEncInt(uint64_t& v);
  bool ReadLenEncString(absl::string_view& s);
  // Up to the next NUL (consumed, not returned); false without a NUL.
  bool ReadNulString(absl::string_view& s);
  bool ReadBytes(size_t n, absl::string_view& s);
  bool Skip(size_t n);
  absl::string_view Rest() const { return rest_; }
  bool empty() const { return rest_.empty(); }

 private:
  absl::string_view rest_;
};

// Server status flags and capability bits msgq uses.
inline constexpr uint16_t kServerStatusAutocommit = 0x0002;

// OK packet payload (affected rows 0, last insert id 0, autocommit).
std::string OkPayload();
// EOF packet payload (0xFE, warnings 0, status).
std::string EofPayload();
// ERR packet payload: 0xFF, code, '#', the 5-character SQLSTATE, message.
std::string ErrPayload(uint16_t code, absl::string_view sql_state,
                       absl::string_view message);

// Error numbers (MySQL's ER_*) msgq answers with.
inline constexpr uint16_t kErConCount = 1040;        // too many connections
inline constexpr uint16_t kErHandshake = 1043;       // bad handshake
inline constexpr uint16_t kErAccessDenied = 1045;    // wrong user/password
inline constexpr uint16_t kErUnknownCom = 1047;      // unknown command
inline constexpr uint16_t kErParse = 1064;           // statement not served
inline constexpr uint16_t kErEmptyQuery = 1065;      // empty query
inline constexpr uint16_t kErUnknown = 1105;         // anything else
inline constexpr uint16_t kErNoSuchTable = 1146;     // unknown table
inline constexpr uint16_t kErPacketTooLarge = 1153;  // > max packet
inline constexpr uint16_t kErNetPacketsOutOfOrder = 1156;
inline constexpr uint16_t kErNoSuchThread = 1094;      // KILL of an unknown id
inline constexpr uint16_t kErQueryInterrupted = 1317;  // KILL QUERY
// The policy does not grant the statement's action on the table.
inline constexpr uint16_t kErTableAccessDenied = 1142;
// --max_streams_per_principal reached.
inline constexpr uint16_t kErUserLimitReached = 1226;
// --mysql_protocol_max_connections_per_principal reached (MySQL's
// ER_TOO_MANY_USER_CONNECTIONS).
inline constexpr uint16_t kErTooManyUserConnections = 1203;
// --mysql_protocol_idle_timeout passed (MySQL 8's
// ER_CLIENT_INTERACTION_TIMEOUT).
inline constexpr uint16_t kErClientInteractionTimeout = 4031;
// TLS is required and the client did not ask for it.
inline constexpr uint16_t kErSecureTransportRequired = 3159;

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_PACKET_H_
