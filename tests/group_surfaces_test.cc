// Consumer groups on msgq's other surfaces, end to end (real MariaDB and
// msgqd; docs/design/consumer-groups.md#every-surface): `msgq tail --group`
// and `msgq ack --group` (the C++ client's SubscriberOptions::group), and
// `stream * from t group g` on the MySQL-protocol port with the stock
// `mariadb` client and a raw socket. Each checks the group's floor in
// msgq_groups and that the default group was left alone.
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/cli_run.h"
#include "tests/mysql_protocol_fixture.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(20);

// The error message of an ERR packet's payload (after code and state).
std::string ErrMessage(const mysql_protocol::Packet& p) {
  return p.payload.size() > 9 ? p.payload.substr(9) : "";
}

class GroupSurfacesTest : public MysqlProtocolTest {
 protected:
  // msgqd with the MySQL port and no lease rows (only the test writes to
  // the binlog: the floors below are exact), table orders, group billing.
  void StartWithBilling() {
    ASSERT_NO_FATAL_FAILURE(CreateTable("orders"));
    ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol({"--leases=false"}));
    ASSERT_NO_FATAL_FAILURE(WaitForBinlog("orders"));
    grpc::ClientContext ctx;
    v1::CreateGroupRequest request;
    request.set_keyspace("msgq");
    request.set_name("orders");
    request.set_group("billing");
    v1::CreateGroupResponse response;
    grpc::Status s = stub_->CreateGroup(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  std::string BinlogPosition() {
    absl::StatusOr<QueryResult> r = db_->Query("SELECT @@gtid_binlog_pos");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->rows.empty()) return "";
    return r->rows[0][0].value_or("");
  }

  std::string Floor() {
    absl::StatusOr<QueryResult> r = db_->Query(
        "SELECT floor_gtid FROM msgq.msgq_groups WHERE table_name = 'orders'"
        " AND group_name = 'billing'");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->rows.size() != 1) return "<none>";
    return r->rows[0][0].value_or("<NULL>");
  }

  // Rows of orders the default group never sent nor acked.
  int64_t UntouchedRows() {
    absl::StatusOr<QueryResult> r = db_->Query(
        "SELECT COUNT(*) FROM msgq.orders WHERE time_acked IS NULL AND "
        "epoch = 0");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return -1;
    return std::stoll(r->rows[0][0].value_or("-1"));
  }

  // The msgq CLI against this test's msgqd.
  CliResult Cli(const std::vector<std::string>& args) {
    return RunCli(MSGQ_CLI_PATH, server_->address(), args);
  }

  // The ids (first column) the `mariadb` client printed, its header aside.
  std::vector<std::string> ClientIds(const launch::ChildProcess& child) {
    std::vector<std::string> ids;
    std::vector<std::string> lines = ClientLines(child);
    for (size_t i = 1; i < lines.size(); ++i) {
      if (absl::StartsWith(lines[i], "ERROR")) continue;
      ids.push_back(lines[i].substr(0, lines[i].find('\t')));
    }
    return ids;
  }

  // A raw client, logged in, that sent `sql`; null after a failed check.
  std::unique_ptr<RawClient> RawQuery(const std::string& sql) {
    auto raw = RawClient::Connect(port_);
    EXPECT_TRUE(raw.ok()) << raw.status();
    if (!raw.ok()) return nullptr;
    auto login = (*raw)->Login(kUser, kPassword);
    EXPECT_TRUE(login.ok()) << login.status();
    if (!login.ok() || login->payload.empty() || login->payload[0] != '\0') {
      return nullptr;
    }
    if (!(*raw)->Send(0, "\x03" + sql)) return nullptr;
    return *std::move(raw);
  }
};

// `msgq tail --group billing --count 4 --ack` prints the group's four
// messages and acks them for the group: the floor passes every transaction
// but the last one read; `msgq ack --group` then settles a message the
// next tail left unacked and the floor moves again.
TEST_F(GroupSurfacesTest, TailAndAckWithAGroupMoveItsFloor) {
  ASSERT_NO_FATAL_FAILURE(StartWithBilling());
  const std::string created = Floor();
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 3));
  const std::string after_1_3 = BinlogPosition();
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 4, 4));
  const std::string after_4 = BinlogPosition();

  CliResult tail = Cli({"tail", "orders", "--group", "billing", "--count", "4",
                        "--ack", "--json"});
  ASSERT_EQ(tail.exit_code, 0) << tail.err << server_->Log();
  EXPECT_EQ(tail.out,
            "{\"id\":1,\"message\":\"{\\\"n\\\": 1}\"}\n"
            "{\"id\":2,\"message\":\"{\\\"n\\\": 2}\"}\n"
            "{\"id\":3,\"message\":\"{\\\"n\\\": 3}\"}\n"
            "{\"id\":4,\"message\":\"{\\\"n\\\": 4}\"}\n");
  EXPECT_NE(Floor(), created);
  EXPECT_EQ(Floor(), after_1_3);  // 4's transaction is the last one read

  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 5, 5));
  CliResult peek =
      Cli({"tail", "orders", "--group=billing", "--count=1", "--json"});
  ASSERT_EQ(peek.exit_code, 0) << peek.err;
  EXPECT_EQ(peek.out, "{\"id\":5,\"message\":\"{\\\"n\\\": 5}\"}\n");
  EXPECT_EQ(Floor(), after_1_3);
  CliResult ack = Cli({"ack", "orders", "5", "--group", "billing"});
  ASSERT_EQ(ack.exit_code, 0) << ack.err;
  EXPECT_EQ(ack.out, "acked 1 of 1\n");
  EXPECT_EQ(Floor(), after_4);
  ack = Cli({"ack", "orders", "5", "--group", "billing"});
  EXPECT_EQ(ack.out, "already acked or not in orders: 5\n");

  // The default group saw none of it.
  EXPECT_EQ(UntouchedRows(), 5);

  CliResult unknown = Cli({"tail", "orders", "--group", "nope", "--count=1"});
  EXPECT_EQ(unknown.exit_code, 4) << unknown.err;
  EXPECT_EQ(unknown.err,
            "msgq tail: NOT_FOUND: group \"nope\" of `msgq`.`orders` not "
            "found; its groups: billing\n");
  unknown = Cli({"ack", "orders", "1", "--group", "nope"});
  EXPECT_EQ(unknown.exit_code, 4) << unknown.err;
  EXPECT_EQ(unknown.err,
            "msgq ack: NOT_FOUND: group \"nope\" of `msgq`.`orders` not "
            "found; its groups: billing\n");
}

// `stream * from orders group billing` with the stock client gets the
// group's messages, which the group acks over gRPC; `stream * from orders`
// beside it still reads the default group, which gets every row too.
TEST_F(GroupSurfacesTest, TheMysqlPortStreamsAGroup) {
  ASSERT_NO_FATAL_FAILURE(StartWithBilling());
  auto group = StartMariadb("stream * from orders group billing");
  ASSERT_NE(group, nullptr);
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 3));
  const std::string after_1_3 = BinlogPosition();
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 4, 4));
  ASSERT_TRUE(WaitForLines(*group, 5)) << group->Log() << server_->Log();
  EXPECT_EQ(ClientLines(*group)[0], "id\tmessage");
  EXPECT_THAT(ClientIds(*group), ElementsAre("1", "2", "3", "4"));

  grpc::ClientContext ctx;
  v1::MessageAckRequest request;
  request.set_keyspace("msgq");
  request.set_name("orders");
  request.set_group("billing");
  for (const char* id : {"1", "2", "3", "4"}) request.add_ids(id);
  v1::MessageAckResponse response;
  grpc::Status s = stub_->MessageAck(&ctx, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.acked(), 4);
  // Insert 4 is the last transaction of the table read: nothing else has
  // written it yet (the default group's postpones would).
  EXPECT_EQ(Floor(), after_1_3);
  auto fallback = StartMariadb("stream * from msgq.orders");
  ASSERT_NE(fallback, nullptr);
  ASSERT_TRUE(WaitForLines(*fallback, 5)) << fallback->Log();

  // Deleting the group ends its stream with the engine's NOT_FOUND.
  grpc::ClientContext del_ctx;
  v1::DeleteGroupRequest del;
  del.set_keyspace("msgq");
  del.set_name("orders");
  del.set_group("billing");
  v1::DeleteGroupResponse deleted;
  s = stub_->DeleteGroup(&del_ctx, del, &deleted);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(group->Stop(0, kWait), 1) << group->Log();
  EXPECT_THAT(group->Log(),
              HasSubstr("ERROR 1105 (HY000) at line 1: NOT_FOUND: group "
                        "\"billing\" of `msgq`.`orders` was deleted"));
  fallback->Stop(SIGKILL, absl::Seconds(5));
}

// An unknown group is ERR 1105 with gRPC's code and text, a malformed
// statement ERR 1064 naming what was expected; the connection stays.
TEST_F(GroupSurfacesTest, TheMysqlPortNamesTheGroupsAndTheSyntax) {
  ASSERT_NO_FATAL_FAILURE(StartWithBilling());
  std::unique_ptr<RawClient> c = RawQuery("stream * from orders group nope");
  ASSERT_NE(c, nullptr);
  absl::StatusOr<mysql_protocol::Packet> err = c->Read();
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_EQ(ErrCode(*err), 1105);
  EXPECT_EQ(err->payload.substr(3, 6), "#HY000");
  EXPECT_EQ(ErrMessage(*err),
            "NOT_FOUND: group \"nope\" of `msgq`.`orders` not found; its "
            "groups: billing");

  ASSERT_TRUE(c->Send(0, "\x03stream * from orders group"));
  err = c->Read();
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_EQ(ErrCode(*err), 1064);
  EXPECT_EQ(err->payload.substr(3, 6), "#42000");
  EXPECT_EQ(ErrMessage(*err),
            "msgq's syntax is 'stream * from [keyspace.]table [group NAME]': "
            "expected a group name after 'group'; got: stream * from orders "
            "group");

  ASSERT_TRUE(c->Send(0, "\x03stream * from nowhere group billing"));
  err = c->Read();
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_EQ(ErrCode(*err), 1146);

  // The stock client prints the same.
  auto client = StartMariadb("stream * from orders group `-x`");
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Stop(0, kWait), 1) << client->Log();
  EXPECT_THAT(client->Log(),
              HasSubstr("ERROR 1105 (HY000) at line 1: INVALID_ARGUMENT: "));
}

}  // namespace
}  // namespace msgq::testing
