#include "server/mysql_protocol/command.h"

#include <string>

#include "gtest/gtest.h"
#include "server/mysql_protocol/result_set.h"

namespace msgq::mysql_protocol {
namespace {

using namespace std::string_literals;
using Action = CommandResult::Action;

Packet Command(uint8_t command, const std::string& arg = "") {
  return Packet{0, std::string(1, char(command)) + arg};
}

TEST(CommandTest, PingIsOkAtSequenceOne) {
  Session s;
  CommandResult r = DispatchCommand(s, Command(kComPing));
  EXPECT_EQ(r.action, Action::kReply);
  EXPECT_EQ(r.reply, "\x07\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00"s);
}

TEST(CommandTest, QuitCloses) {
  Session s;
  CommandResult r = DispatchCommand(s, Command(kComQuit));
  EXPECT_EQ(r.action, Action::kClose);
  EXPECT_EQ(r.reply, "");
}

TEST(CommandTest, UnknownCommandIsErr1047) {
  Session s;
  CommandResult r = DispatchCommand(s, Command(0x16, "x"));  // stmt prepare
  EXPECT_EQ(r.action, Action::kReply);
  ASSERT_GE(r.reply.size(), 13u);
  EXPECT_EQ(r.reply.substr(3, 10), "\x01\xff\x17\x04#08S01"s);
}

TEST(CommandTest, OutOfOrderClosesWith1156) {
  Session s;
  CommandResult r = DispatchCommand(s, Packet{3, "\x0e"s});
  EXPECT_EQ(r.action, Action::kClose);
  EXPECT_EQ(r.reply.substr(3, 10), "\x04\xff\x84\x04#08S01"s);
}

TEST(CommandTest, UnservedStatementIsErr1064) {
  Session s;
  CommandResult r = DispatchCommand(s, Command(kComQuery, "show databases"));
  EXPECT_EQ(r.action, Action::kReply);
  EXPECT_EQ(r.reply.substr(3, 10), "\x01\xff\x28\x04#42000"s);
  r = DispatchCommand(s, Command(kComQuery, ""));
  EXPECT_EQ(r.reply.substr(3, 10), "\x01\xff\x29\x04#42000"s);
}

TEST(CommandTest, StreamOfAGroup) {
  Session s{.database = "app"};
  CommandResult r =
      DispatchCommand(s, Command(kComQuery, "stream * from q group billing"));
  EXPECT_EQ(r.action, Action::kStream);
  EXPECT_EQ(r.keyspace, "app");
  EXPECT_EQ(r.table, "q");
  EXPECT_EQ(r.group, "billing");
  r = DispatchCommand(s, Command(kComQuery, "stream * from q"));
  EXPECT_EQ(r.group, "");
}

// A malformed `stream` statement: ERR 1064 / 42000 saying what was expected.
TEST(CommandTest, AMalformedStreamNamesWhatWasExpected) {
  Session s;
  const std::string sql = "stream * from q group";
  CommandResult r = DispatchCommand(s, Command(kComQuery, sql));
  EXPECT_EQ(r.action, Action::kReply);
  const std::string message =
      "msgq's syntax is 'stream * from [keyspace.]table [group NAME]': "
      "expected a group name after 'group'; got: " +
      sql;
  EXPECT_EQ(r.reply.substr(3), "\x01\xff\x28\x04#42000"s + message);
}

TEST(CommandTest, UseAndInitDbSetTheStreamKeyspace) {
  Session s;
  CommandResult r = DispatchCommand(s, Command(kComQuery, "stream * from q"));
  EXPECT_EQ(r.action, Action::kStream);
  EXPECT_EQ(r.keyspace, "");
  EXPECT_EQ(r.table, "q");
  DispatchCommand(s, Command(kComInitDb, "app"));
  EXPECT_EQ(s.database, "app");
  r = DispatchCommand(s, Command(kComQuery, "stream * from q"));
  EXPECT_EQ(r.keyspace, "app");
  DispatchCommand(s, Command(kComQuery, "use other"));
  r = DispatchCommand(s, Command(kComQuery, "stream * from x.q"));
  EXPECT_EQ(r.keyspace, "x");
  EXPECT_EQ(s.database, "other");
}

TEST(CommandTest, SelectOneExactResultSet) {
  Session s;
  CommandResult r = DispatchCommand(s, Command(kComQuery, "select 1"));
  EXPECT_EQ(r.action, Action::kReply);
  const std::string want =
      "\x01\x00\x00\x01\x01"  // one column
      "\x18\x00\x00\x02"
      "\x03"
      "def"
      "\x00\x00\x00"
      "\x01"
      "1"
      "\x01"
      "1"
      "\x0c\x3f\x00\x15\x00\x00\x00\x08\x01\x80\x00\x00\x00"
      "\x05\x00\x00\x03\xfe\x00\x00\x02\x00"  // EOF
      "\x02\x00\x00\x04\x01"
      "1"                                       // row "1"
      "\x05\x00\x00\x05\xfe\x00\x00\x02\x00"s;  // EOF
  EXPECT_EQ(r.reply, want);
}

// A 1 MiB COM_QUERY is refused from the first bytes a connection reads:
// its header announces more than MaxCommandPayload, so none of it is kept.
TEST(CommandTest, AStatementOverTheCapIsRefusedFromItsHeader) {
  uint8_t seq = 0;
  const std::string query =
      Frame(seq, "\x03"s + "select " + std::string(1 << 20, '('));
  size_t consumed = 99;
  auto p = ParsePacket(absl::string_view(query).substr(0, 16384),
                       MaxCommandPayload(kDefaultMaxQueryBytes), &consumed);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(consumed, 0u);
  p = ParsePacket(absl::string_view(query).substr(0, 4),
                  MaxCommandPayload(kDefaultMaxQueryBytes), &consumed);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);

  // A statement of exactly the cap is read and answered.
  std::string set = "set @x='" + std::string(kDefaultMaxQueryBytes, 'a');
  set.resize(kDefaultMaxQueryBytes - 1);
  set += "'";
  seq = 0;
  const std::string at_cap = Frame(seq, "\x03"s + set);
  p = ParsePacket(at_cap, MaxCommandPayload(kDefaultMaxQueryBytes), &consumed);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ(consumed, at_cap.size());
  Session s;
  CommandResult r = DispatchCommand(s, **p);
  EXPECT_EQ(r.action, Action::kReply);
  EXPECT_EQ(r.reply, "\x07\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00"s);
  seq = 0;
  const std::string over = Frame(seq, "\x03"s + set + " ");
  p = ParsePacket(over, MaxCommandPayload(kDefaultMaxQueryBytes), &consumed);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CommandTest, PacketTooLargeIsErr1153) {
  const std::string err = PacketTooLargeErr(1, 16384);
  const std::string message =
      "Got a packet bigger than 'max_allowed_packet' bytes: this port takes "
      "statements of at most 16384 bytes (--mysql_protocol_max_query_bytes)";
  uint8_t seq = 1;
  EXPECT_EQ(err, Frame(seq, "\xff\x81\x04#08S01"s + message));
}

TEST(ResultSetTest, PackedRowNullsAndTypes) {
  PackedRow row;
  row.lengths = {1, -1, 3};
  row.values = "7abc";
  EXPECT_EQ(PackedRowPayload(row),
            "\x01"
            "7"
            "\xfb"
            "\x03"
            "abc"s);
  row.lengths = {1, 10};  // overruns: the rest is NULL, nothing read past
  EXPECT_EQ(PackedRowPayload(row),
            "\x01"
            "7"
            "\xfb"s);

  ColumnDefinition id =
      DefinitionOf("msgq", "q", Column{"id", "bigint", "bigint(20)"});
  EXPECT_EQ(id.type, kTypeLongLong);
  EXPECT_EQ(id.charset, 63);
  EXPECT_EQ(id.flags, kNumFlag | kPriKeyFlag);
  ColumnDefinition msg =
      DefinitionOf("msgq", "q", Column{"message", "longtext", "longtext"});
  EXPECT_EQ(msg.type, kTypeBlob);
  EXPECT_EQ(msg.charset, 45);
  ColumnDefinition v =
      DefinitionOf("msgq", "q", Column{"v", "varbinary", "varbinary(16)"});
  EXPECT_EQ(v.type, kTypeVarString);
  EXPECT_EQ(v.length, 16u);
  EXPECT_EQ(v.flags, kBinaryFlag);
  ColumnDefinition u =
      DefinitionOf("msgq", "q", Column{"n", "int", "int(10) unsigned"});
  EXPECT_EQ(u.flags, kNumFlag | kUnsignedFlag);
  EXPECT_EQ(DefinitionOf("msgq", "q", Column{"g", "point", "point"}).type,
            kTypeVarString);
}

}  // namespace
}  // namespace msgq::mysql_protocol
