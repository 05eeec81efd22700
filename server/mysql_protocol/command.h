// Command dispatch of msgq's MySQL-protocol port: turns one command packet
// (after the handshake) into a framed reply, a close, or a request to stream
// a table. No I/O and no engine: the connection (connection.h) does the
// streaming itself. Pure function over a Session: thread-compatible.
//
// Served: COM_QUIT, COM_INIT_DB, COM_PING, COM_QUERY with the statements of
// statement.h. Everything else: ERR 1047 / 08S01 (unknown command, the
// connection stays); a statement msgq does not serve: ERR 1064 / 42000; an
// empty one: ERR 1065 / 42000; a command packet whose sequence id is not 0:
// ERR 1156 / 08S01 and close (client and server disagree on the stream).
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_COMMAND_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_COMMAND_H_

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
    kStream,  // stream keyspace.table; the result set starts at seq 1
    kKill,    // KILL [QUERY|CONNECTION] kill_id: the connection answers
  };
  Action action = Action::kReply;
  std::string reply;     // framed packets
  std::string keyspace;  // kStream: as written, or the session's database
  std::string table;     // kStream
  uint32_t kill_id = 0;  // kKill
  bool kill_connection = false;
};

CommandResult DispatchCommand(Session& session, const Packet& packet);

// A framed ERR packet with sequence id `seq`.
std::string ErrPacket(uint8_t seq, uint16_t code, absl::string_view state,
                      absl::string_view message);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_COMMAND_H_
