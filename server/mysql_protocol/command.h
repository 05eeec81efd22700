// Command dispatch of msgq's MySQL-protocol port: turns one command packet
// (after the handshake) into a framed reply, a close, or a request to stream
// a table. No I/O and no engine: the connection (connection.h) does the
// streaming itself. Pure function over a Session: thread-compatible.
//
// Served: COM_QUIT, COM_INIT_DB, COM_PING, COM_QUERY with the statements of
// statement.h. Everything else: ERR 1047 / 08S01 (unknown command, the
// connection stays); a statement msgq does not serve: ERR 1064 / 42000
// (for a malformed `stream` statement, naming what was expected); an
// empty one: ERR 1065 / 42000; a command packet whose sequence id is not 0:
// ERR 1156 / 08S01 and close (client and server disagree on the stream).
//
// Statement size: a connection reads command packets of at most
// MaxCommandPayload(max_query_bytes) bytes (--mysql_protocol_max_query_bytes,
// default kDefaultMaxQueryBytes). ParsePacket refuses a longer one from its
// 4-byte header, so a long statement is never read into memory, let alone
// tokenized: the connection answers PacketTooLargeErr (ERR 1153 / 08S01,
// MySQL's answer to a packet over max_allowed_packet) and closes, since the
// rest of the packet is still on its way.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_COMMAND_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_COMMAND_H_

#include <cstddef>
#include <string>

#include "server/mysql_protocol/packet.h"

namespace msgq::mysql_protocol {

inline constexpr uint8_t kComQuit = 0x01;
inline constexpr uint8_t kComInitDb = 0x02;
inline constexpr uint8_t kComQuery = 0x03;
inline constexpr uint8_t kComPing = 0x0E;

// What `@@version_comment` answers (the mariadb client prints it at start).
inline constexpr char kVersionComment[] = "msgq";

struct Session {
  std::string database;  // from the handshake, COM_INIT_DB or USE
};

struct CommandResult {
  enum class Action {
    kReply,   // write `reply`, read the next command
    kClose,   // write `reply` (may be empty), then close
    kStream,  // stream keyspace.table [group]; the result set starts at seq 1
    kKill,    // KILL [QUERY|CONNECTION] kill_id: the connection answers
  };
  Action action = Action::kReply;
  std::string reply;     // framed packets
  std::string keyspace;  // kStream: as written, or the session's database
  std::string table;     // kStream
  std::string group;     // kStream: "" = the default group
  uint32_t kill_id = 0;  // kKill
  bool kill_connection = false;
};

CommandResult DispatchCommand(Session& session, const Packet& packet);

// msgq's statements are a few dozen bytes; clients' connect-time SETs a few
// hundred.
inline constexpr size_t kDefaultMaxQueryBytes = 16 * 1024;

// The largest command packet payload for statements of at most
// `max_query_bytes`: the command byte and the statement.
constexpr size_t MaxCommandPayload(size_t max_query_bytes) {
  return max_query_bytes + 1;
}

// ERR 1153 / 08S01 (sequence id `seq`) for a packet over
// MaxCommandPayload(max_query_bytes).
std::string PacketTooLargeErr(uint8_t seq, size_t max_query_bytes);

// A framed ERR packet with sequence id `seq`.
std::string ErrPacket(uint8_t seq, uint16_t code, absl::string_view state,
                      absl::string_view message);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_COMMAND_H_
