#include "server/mysql_protocol/command.h"

#include "absl/strings/str_cat.h"
#include "server/mysql_protocol/handshake.h"
#include "server/mysql_protocol/result_set.h"
#include "server/mysql_protocol/statement.h"

namespace msgq::mysql_protocol {
namespace {

ColumnDefinition TextColumn(absl::string_view name) {
  ColumnDefinition def;
  def.name = std::string(name);
  def.length = 256;
  return def;
}

CommandResult Reply(std::string bytes) {
  CommandResult r;
  r.reply = std::move(bytes);
  return r;
}

CommandResult Ok() {
  uint8_t seq = 1;
  return Reply(Frame(seq, OkPayload()));
}

CommandResult Err(uint16_t code, absl::string_view state,
                  absl::string_view message) {
  return Reply(ErrPacket(1, code, state, message));
}

// Short form of a statement for error messages.
std::string Quote(absl::string_view sql) {
  constexpr size_t kMax = 80;
  std::string s(sql.substr(0, kMax));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (sql.size() > kMax) s += "...";
  return s;
}

CommandResult Query(Session& session, absl::string_view sql) {
  using Kind = Statement::Kind;
  const Statement st = RecognizeStatement(sql);
  uint8_t seq = 1;
  switch (st.kind) {
    case Kind::kEmpty:
      return Err(kErEmptyQuery, "42000", "Query was empty");
    case Kind::kStream: {
      CommandResult r;
      r.action = CommandResult::Action::kStream;
      r.keyspace = st.keyspace.empty() ? session.database : st.keyspace;
      r.table = st.table;
      r.group = st.group;
      return r;
    }
    case Kind::kUse:
      session.database = st.keyspace;
      return Ok();
    case Kind::kSet:
      return Ok();
    case Kind::kKill: {
      CommandResult r;
      r.action = CommandResult::Action::kKill;
      r.kill_id = st.kill_id;
      r.kill_connection = st.kill_connection;
      return r;
    }
    case Kind::kSelectVersionComment:
      return Reply(SmallResultSet(seq, {TextColumn("@@version_comment")},
                                  {{std::string(kVersionComment)}}));
    case Kind::kSelectVersion:
      return Reply(SmallResultSet(seq, {TextColumn("@@version")},
                                  {{std::string(kServerVersion)}}));
    case Kind::kSelectDatabase: {
      std::optional<std::string> db;
      if (!session.database.empty()) db = session.database;
      return Reply(SmallResultSet(seq, {TextColumn("DATABASE()")}, {{db}}));
    }
    case Kind::kSelectInteger: {
      ColumnDefinition def = TextColumn(st.literal);
      def.type = kTypeLongLong;
      def.charset = kBinaryCharset;
      def.flags = kNotNullFlag | kNumFlag;
      def.length = 21;
      return Reply(SmallResultSet(seq, {def}, {{st.literal}}));
    }
    case Kind::kUnsupported:
      break;
  }
  if (!st.expected.empty()) {
    return Err(kErParse, "42000",
               absl::StrCat("msgq's syntax is 'stream * from "
                            "[keyspace.]table [group NAME]': expected ",
                            st.expected, "; got: ", Quote(sql)));
  }
  return Err(kErParse, "42000",
             absl::StrCat("msgq serves only 'stream * from [keyspace.]table "
                          "[group NAME]' over the MySQL protocol; got: ",
                          Quote(sql)));
}

}  // namespace

std::string ErrPacket(uint8_t seq, uint16_t code, absl::string_view state,
                      absl::string_view message) {
  return Frame(seq, ErrPayload(code, state, message));
}

std::string PacketTooLargeErr(uint8_t seq, size_t max_query_bytes) {
  return ErrPacket(
      seq, kErPacketTooLarge, "08S01",
      absl::StrCat("Got a packet bigger than 'max_allowed_packet' bytes: this "
                   "port takes statements of at most ",
                   max_query_bytes,
                   " bytes (--mysql_protocol_max_query_bytes)"));
}

CommandResult DispatchCommand(Session& session, const Packet& packet) {
  if (packet.seq != 0) {
    CommandResult r;
    r.action = CommandResult::Action::kClose;
    r.reply = ErrPacket(uint8_t(packet.seq + 1), kErNetPacketsOutOfOrder,
                        "08S01", "Got packets out of order");
    return r;
  }
  if (packet.payload.empty()) {
    return Err(kErUnknownCom, "08S01", "Unknown command (empty packet)");
  }
  const uint8_t command = static_cast<uint8_t>(packet.payload[0]);
  const absl::string_view arg = absl::string_view(packet.payload).substr(1);
  switch (command) {
    case kComQuit: {
      CommandResult r;
      r.action = CommandResult::Action::kClose;
      return r;
    }
    case kComPing:
      return Ok();
    case kComInitDb:
      if (arg.empty()) return Err(1046, "3D000", "No database selected");
      session.database = std::string(arg);
      return Ok();
    case kComQuery:
      return Query(session, arg);
    default:
      return Err(kErUnknownCom, "08S01",
                 absl::StrCat("Unknown command ", int{command},
                              ": msgq serves COM_QUERY, COM_PING, "
                              "COM_INIT_DB and COM_QUIT"));
  }
}

}  // namespace msgq::mysql_protocol
