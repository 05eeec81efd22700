// Consumer groups end to end (docs/design/consumer-groups.md): creating,
// listing and deleting them over gRPC and with the msgq CLI against a real
// msgqd and MariaDB, the rows msgqd keeps in msgq_groups, the errors a
// request gets, and the policy's `admin` action guarding them.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "tests/cli_run.h"
#include "tests/fixture.h"
#include "tests/security_fixture.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The columns of the test tables after the fixture's own.
constexpr char kExtraColumns[] =
    "type varchar(32) NOT NULL DEFAULT '', region char(2) NOT NULL DEFAULT ''";

grpc::Status CreateGroup(v1::Messaging::Stub* stub, const std::string& table,
                         const std::string& group, const std::string& start,
                         const std::string& filter, v1::Group* out = nullptr,
                         const std::string& token = "",
                         const std::string& keyspace = "msgq") {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  v1::CreateGroupRequest request;
  request.set_keyspace(keyspace);
  request.set_name(table);
  request.set_group(group);
  request.set_start(start);
  request.set_filter(filter);
  v1::CreateGroupResponse response;
  grpc::Status s = stub->CreateGroup(&ctx, request, &response);
  if (out != nullptr) *out = response.group();
  return s;
}

grpc::Status ListGroups(v1::Messaging::Stub* stub, const std::string& table,
                        std::vector<v1::Group>* out,
                        const std::string& token = "",
                        const std::string& keyspace = "") {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  v1::ListGroupsRequest request;
  request.set_keyspace(keyspace);
  request.set_name(table);
  v1::ListGroupsResponse response;
  grpc::Status s = stub->ListGroups(&ctx, request, &response);
  out->assign(response.groups().begin(), response.groups().end());
  return s;
}

grpc::Status DeleteGroup(v1::Messaging::Stub* stub, const std::string& table,
                         const std::string& group,
                         const std::string& token = "",
                         const std::string& keyspace = "") {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  v1::DeleteGroupRequest request;
  request.set_keyspace(keyspace);
  request.set_name(table);
  request.set_group(group);
  v1::DeleteGroupResponse response;
  return stub->DeleteGroup(&ctx, request, &response);
}

std::vector<std::string> Names(const std::vector<v1::Group>& groups) {
  std::vector<std::string> out;
  for (const v1::Group& g : groups) out.push_back(g.table() + "/" + g.name());
  return out;
}

class GroupsTest : public MsgqTest {
 protected:
  // msgqd without lease rows, so that nothing but the test writes to the
  // binlog and a "latest" floor can be predicted; tables orders and events.
  void StartWithTables() {
    ASSERT_NO_FATAL_FAILURE(CreateTable("orders", "", kExtraColumns));
    ASSERT_NO_FATAL_FAILURE(CreateTable("events"));
    ASSERT_NO_FATAL_FAILURE(StartServer({"--leases=false"}));
    ASSERT_NO_FATAL_FAILURE(WaitForBinlog("orders"));
    ASSERT_NO_FATAL_FAILURE(WaitForBinlog("events"));
  }

  std::string BinlogPosition() {
    absl::StatusOr<QueryResult> r = db_->Query("SELECT @@gtid_binlog_pos");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->rows.empty()) return "";
    return r->rows[0][0].value_or("");
  }

  // Every row of msgq.msgq_groups, one "table|group|floor|filter|created|
  // paused|settings" string each, by key.
  std::vector<std::string> GroupRows() {
    absl::StatusOr<QueryResult> r = db_->Query(
        "SELECT table_name, group_name, floor_gtid, filter, created_at, "
        "paused, IFNULL(settings, 'NULL') FROM msgq.msgq_groups "
        "ORDER BY table_name, group_name");
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<std::string> out;
    if (!r.ok()) return out;
    for (const auto& row : r->rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        absl::StrAppend(&line, i > 0 ? "|" : "", row[i].value_or("NULL"));
      }
      out.push_back(line);
    }
    return out;
  }

  // The msgq CLI against this test's msgqd.
  CliResult Cli(const std::vector<std::string>& args) {
    return RunCli(MSGQ_CLI_PATH, server_->address(), args);
  }
};

TEST_F(GroupsTest, CreateListAndDeleteOverGrpc) {
  ASSERT_NO_FATAL_FAILURE(StartWithTables());
  // Tables msgq_groups and msgq_group_messages do not exist before the
  // first group; listing then finds none.
  std::vector<v1::Group> groups;
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups).ok());
  EXPECT_THAT(groups, IsEmpty());

  v1::Group billing;
  grpc::Status s =
      CreateGroup(stub_.get(), "orders", "billing", "earliest", "", &billing);
  ASSERT_TRUE(s.ok()) << s.error_message() << server_->Log();
  EXPECT_EQ(billing.keyspace(), "msgq");
  EXPECT_EQ(billing.table(), "orders");
  EXPECT_EQ(billing.name(), "billing");
  EXPECT_EQ(billing.floor_gtid(), "");
  EXPECT_EQ(billing.filter(), "");
  EXPECT_FALSE(billing.paused());

  // latest: the binlog's position at creation.
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 3));
  const std::string before_search = BinlogPosition();
  ASSERT_FALSE(before_search.empty());
  v1::Group search;
  s = CreateGroup(stub_.get(), "orders", "search", "latest",
                  "type in ('order.created','order.paid') and REGION='eu'",
                  &search);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(search.floor_gtid(), before_search);
  EXPECT_EQ(search.filter(),
            "type IN ('order.created', 'order.paid') AND region = 'eu'");

  // An empty start is latest too; gtid: is stored as given (canonical).
  const std::string before_default = BinlogPosition();
  v1::Group analytics;
  ASSERT_TRUE(
      CreateGroup(stub_.get(), "orders", "analytics", "", "", &analytics).ok());
  EXPECT_EQ(analytics.floor_gtid(), before_default);
  v1::Group replay;
  ASSERT_TRUE(CreateGroup(stub_.get(), "events", "replay",
                          "gtid:" + before_search, "", &replay)
                  .ok());
  EXPECT_EQ(replay.floor_gtid(), before_search);

  // The rows as msgqd wrote them; created_at is MySQL's clock, as returned.
  EXPECT_THAT(
      GroupRows(),
      ElementsAre(
          absl::StrCat("events|replay|", before_search, "||",
                       replay.created_at_ns(), "|0|NULL"),
          absl::StrCat("orders|analytics|", before_default, "||",
                       analytics.created_at_ns(), "|0|NULL"),
          absl::StrCat("orders|billing|||", billing.created_at_ns(), "|0|NULL"),
          absl::StrCat("orders|search|", before_search,
                       "|type IN ('order.created', 'order.paid') AND region = "
                       "'eu'|",
                       search.created_at_ns(), "|0|NULL")));
  EXPECT_GT(billing.created_at_ns(), NowNanos() - int64_t{600} * 1000000000);
  EXPECT_LE(billing.created_at_ns(), search.created_at_ns());
  absl::StatusOr<QueryResult> exceptions = db_->Query(
      "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
      "'msgq' AND TABLE_NAME = 'msgq_group_messages' ORDER BY "
      "ORDINAL_POSITION");
  ASSERT_TRUE(exceptions.ok()) << exceptions.status();
  std::vector<std::string> columns;
  for (const auto& row : exceptions->rows) columns.push_back(*row[0]);
  EXPECT_THAT(columns, ElementsAre("table_name", "group_name", "id", "attempts",
                                   "time_next", "time_dead", "last_error"));

  // Listing: one table, or every table, by table and name.
  ASSERT_TRUE(ListGroups(stub_.get(), "orders", &groups).ok());
  EXPECT_THAT(Names(groups), ElementsAre("orders/analytics", "orders/billing",
                                         "orders/search"));
  EXPECT_EQ(groups[2].filter(), search.filter());
  EXPECT_EQ(groups[2].floor_gtid(), before_search);
  EXPECT_EQ(groups[2].created_at_ns(), search.created_at_ns());
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups).ok());
  EXPECT_THAT(Names(groups), ElementsAre("events/replay", "orders/analytics",
                                         "orders/billing", "orders/search"));
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups, "", "msgq").ok());
  EXPECT_EQ(groups.size(), 4u);

  // Deleting one leaves the others.
  s = DeleteGroup(stub_.get(), "orders", "billing");
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(ListGroups(stub_.get(), "orders", &groups).ok());
  EXPECT_THAT(Names(groups), ElementsAre("orders/analytics", "orders/search"));
  EXPECT_EQ(GroupRows().size(), 3u);
  s = DeleteGroup(stub_.get(), "orders", "billing");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "group \"billing\" of `msgq`.`orders` not found; its groups: "
            "analytics, search");
  ASSERT_TRUE(DeleteGroup(stub_.get(), "events", "replay").ok());
  s = DeleteGroup(stub_.get(), "events", "replay");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "group \"replay\" of `msgq`.`events` not found; it has none");
}

TEST_F(GroupsTest, RequestsAreValidatedWithPreciseErrors) {
  ASSERT_NO_FATAL_FAILURE(StartWithTables());
  ASSERT_TRUE(
      CreateGroup(stub_.get(), "orders", "billing", "earliest", "").ok());
  struct Case {
    std::string table, group, start, filter;
    grpc::StatusCode code;
    std::string message;
  };
  const std::string position = BinlogPosition();
  const std::vector<std::string> parts = absl::StrSplit(position, '-');
  ASSERT_EQ(parts.size(), 3u) << position;
  uint64_t sequence = 0;
  ASSERT_TRUE(absl::SimpleAtoi(parts[2], &sequence));
  const std::string ahead =
      absl::StrCat(parts[0], "-", parts[1], "-", sequence + 1000);
  const std::vector<Case> cases = {
      {"orders", "billing", "earliest", "", grpc::StatusCode::ALREADY_EXISTS,
       "group \"billing\" of `msgq`.`orders` already exists"},
      {"orders", "", "", "", grpc::StatusCode::INVALID_ARGUMENT,
       "group name is empty"},
      {"orders", "bil ling", "", "", grpc::StatusCode::INVALID_ARGUMENT,
       "group name \"bil ling\" has ' ' at position 4; a group name is "
       "letters, digits, '_' and '-', starting with a letter or a digit"},
      {"orders", std::string(65, 'g'), "", "",
       grpc::StatusCode::INVALID_ARGUMENT,
       "group name \"" + std::string(64, 'g') +
           "... (65 bytes)\" is 65 characters; at most 64"},
      {"ordrs", "g", "", "", grpc::StatusCode::NOT_FOUND,
       "message table `msgq`.`ordrs` not found; message tables: events, "
       "orders"},
      {"orders", "g", "", "typ = 'a'", grpc::StatusCode::INVALID_ARGUMENT,
       "filter: unknown column \"typ\"; columns: id, priority, message, "
       "type, region"},
      {"orders", "g", "", "priority = 'high'",
       grpc::StatusCode::INVALID_ARGUMENT,
       "filter: column \"priority\" is tinyint(4): 'high' is a string; write "
       "integers without quotes"},
      {"orders", "g", "", "region IN ()", grpc::StatusCode::INVALID_ARGUMENT,
       "filter: empty IN list for column \"region\" at position 12: name at "
       "least one value"},
      {"orders", "g", "", "type = 'a' OR type = 'b'",
       grpc::StatusCode::INVALID_ARGUMENT,
       "filter: OR at position 12 is not supported: conditions are joined by "
       "AND; for alternatives of one column use IN (...)"},
      {"orders", "g", "", "epoch = 1", grpc::StatusCode::INVALID_ARGUMENT,
       "filter: column \"epoch\" is msgq's bookkeeping, not the "
       "application's; columns: id, priority, message, type, region"},
      {"orders", "g", "yesterday", "", grpc::StatusCode::INVALID_ARGUMENT,
       "--from=\"yesterday\": use earliest, latest, gtid:D-S-N[,D-S-N...] or "
       "time:TIMESTAMP"},
      {"orders", "g", "time:2026-12-07T12:00:00Z", "",
       grpc::StatusCode::UNIMPLEMENTED,
       "--from=time: is not built yet; start from earliest, latest or "
       "gtid:D-S-N"},
      {"orders", "g", "gtid:0-1", "", grpc::StatusCode::INVALID_ARGUMENT,
       "--from: GTID \"0-1\" is not DOMAIN-SERVER-SEQUENCE (unsigned numbers: "
       "domain and server up to 4294967295, sequence up to "
       "18446744073709551615)"},
      {"orders", "g", "gtid:" + ahead, "", grpc::StatusCode::INVALID_ARGUMENT,
       absl::StrCat("gtid:", ahead, " is past the server's binlog position \"",
                    position, "\" (domain ", parts[0], " is at ", sequence,
                    ")")},
  };
  for (const Case& c : cases) {
    grpc::Status s =
        CreateGroup(stub_.get(), c.table, c.group, c.start, c.filter);
    EXPECT_EQ(s.error_code(), c.code) << c.group << " " << c.filter;
    EXPECT_EQ(s.error_message(), c.message);
  }
  // An unserved keyspace names the served ones; an empty one the tables.
  grpc::Status s =
      CreateGroup(stub_.get(), "orders", "g", "", "", nullptr, "", "nope");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "keyspace \"nope\" is not served; keyspaces: msgq");
  s = CreateGroup(stub_.get(), "ordrs", "g", "", "", nullptr, "", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "message table `ordrs` not found in keyspaces msgq; message "
            "tables: events, orders");
  s = DeleteGroup(stub_.get(), "orders", "bad name");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Nothing was stored by the refused requests.
  EXPECT_EQ(GroupRows().size(), 1u);
}

TEST_F(GroupsTest, TheCliCreatesListsAndDeletes) {
  ASSERT_NO_FATAL_FAILURE(StartWithTables());
  CliResult r =
      Cli({"groups", "create", "orders", "billing", "--from=earliest"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "created group billing of msgq.orders from earliest\n");
  const std::string position = BinlogPosition();
  r = Cli({"groups", "create", "orders", "search",
           "--filter=type IN ('order.created','order.paid')"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "created group search of msgq.orders from " + position +
                       " with filter type IN ('order.created', "
                       "'order.paid')\n");

  std::vector<v1::Group> groups;
  ASSERT_TRUE(ListGroups(stub_.get(), "orders", &groups).ok());
  ASSERT_EQ(groups.size(), 2u);
  auto created = [](const v1::Group& g) {
    return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                            absl::FromUnixNanos(g.created_at_ns()),
                            absl::UTCTimeZone());
  };
  r = Cli({"groups", "list"});
  EXPECT_EQ(r.exit_code, 0) << r;
  // FLOOR is as wide as its widest cell; CREATED's cells are 20 wide.
  const size_t floor = std::max<size_t>(8, position.size());
  auto pad = [](const std::string& cell, size_t width) {
    return cell + std::string(width - cell.size(), ' ') + "  ";
  };
  EXPECT_EQ(r.out, "KEYSPACE  TABLE   GROUP    " + pad("FLOOR", floor) +
                       pad("CREATED", 20) + "FILTER\n" +
                       "msgq      orders  billing  " + pad("earliest", floor) +
                       created(groups[0]) + "  -\n" +
                       "msgq      orders  search   " + pad(position, floor) +
                       created(groups[1]) +
                       "  type IN ('order.created', 'order.paid')\n");
  r = Cli({"groups", "list", "orders", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(
      r.out,
      absl::StrCat("{\"groups\":[{\"keyspace\":\"msgq\",\"table\":\"orders\","
                   "\"name\":\"billing\",\"floor_gtid\":\"\",\"filter\":\"\","
                   "\"created_at_ns\":",
                   groups[0].created_at_ns(),
                   ",\"paused\":false},{\"keyspace\":\"msgq\",\"table\":"
                   "\"orders\",\"name\":\"search\",\"floor_gtid\":\"",
                   position,
                   "\",\"filter\":\"type IN ('order.created', 'order.paid')\","
                   "\"created_at_ns\":",
                   groups[1].created_at_ns(), ",\"paused\":false}]}\n"));

  r = Cli({"groups", "create", "orders", "billing"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(r.err,
            "msgq groups: ALREADY_EXISTS: group \"billing\" of `msgq`.`orders` "
            "already exists\n");
  r = Cli({"groups", "create", "orders", "g", "--filter=typ = 'a'"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(r.err,
            "msgq groups: INVALID_ARGUMENT: filter: unknown column \"typ\"; "
            "columns: id, priority, message, type, region\n");
  r = Cli({"groups", "create", "ordrs", "g"});
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_EQ(r.err,
            "msgq groups: NOT_FOUND: message table `ordrs` not found in "
            "keyspaces msgq; message tables: events, orders\n");
  r = Cli(
      {"groups", "create", "orders", "g", "--from=time:2026-12-07T00:00:00Z"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(r.err,
            "msgq groups: UNIMPLEMENTED: --from=time: is not built yet; start "
            "from earliest, latest or gtid:D-S-N\n");
  r = Cli({"groups", "create", "orders"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(
      r.err,
      "msgq groups: missing GROUP\nRun 'msgq groups --help' for usage.\n");
  r = Cli({"groups", "list", "orders", "--filter=x"});
  EXPECT_EQ(r.exit_code, 2) << r;

  r = Cli({"groups", "delete", "orders", "billing"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "deleted group billing of orders\n");
  r = Cli({"groups", "delete", "orders", "billing"});
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_EQ(r.err,
            "msgq groups: NOT_FOUND: group \"billing\" of `msgq`.`orders` not "
            "found; its groups: search\n");
  EXPECT_THAT(GroupRows(), ElementsAre(absl::StrCat(
                               "orders|search|", position,
                               "|type IN ('order.created', 'order.paid')|",
                               groups[1].created_at_ns(), "|0|NULL")));
}

class GroupsAuthTest : public SecurityTest {};

TEST_F(GroupsAuthTest, OnlyAdminsManageGroups) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("b"));
  ReplaceFile(Path("tokens"), TokenLine("tok-worker", "worker") +
                                  TokenLine("tok-ops", "ops") +
                                  TokenLine("tok-b", "badmin"));
  ReplaceFile(Path("policy"),
              "worker msgq/a stream,ack,nack\nops */* admin\nbadmin msgq/b "
              "admin\n");
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--auth_tokens_file=" + Path("tokens"),
                   "--auth_policy_file=" + Path("policy"), "--leases=false"}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "b", "tok-ops"));

  grpc::Status s =
      CreateGroup(stub_.get(), "a", "g", "earliest", "", nullptr, "tok-worker");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'worker' may not admin msgq.a");
  s = CreateGroup(stub_.get(), "a", "g", "earliest", "", nullptr, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(
      CreateGroup(stub_.get(), "a", "g", "earliest", "", nullptr, "tok-ops")
          .ok());
  ASSERT_TRUE(
      CreateGroup(stub_.get(), "b", "h", "earliest", "", nullptr, "tok-b")
          .ok());
  s = CreateGroup(stub_.get(), "a", "h", "earliest", "", nullptr, "tok-b");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'badmin' may not admin msgq.a");

  std::vector<v1::Group> groups;
  s = ListGroups(stub_.get(), "a", &groups, "tok-worker");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'worker' may not admin msgq.a");
  // Listing every table shows each caller only the groups it administers.
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups, "tok-worker").ok());
  EXPECT_THAT(groups, IsEmpty());
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups, "tok-b").ok());
  EXPECT_THAT(Names(groups), ElementsAre("b/h"));
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups, "tok-ops").ok());
  EXPECT_THAT(Names(groups), ElementsAre("a/g", "b/h"));
  s = ListGroups(stub_.get(), "", &groups, "tok-wrong");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  s = DeleteGroup(stub_.get(), "a", "g", "tok-worker");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'worker' may not admin msgq.a");
  s = DeleteGroup(stub_.get(), "a", "g", "tok-worker", "msgq");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups, "tok-ops").ok());
  EXPECT_THAT(Names(groups), ElementsAre("a/g", "b/h"));
  EXPECT_TRUE(DeleteGroup(stub_.get(), "a", "g", "tok-ops").ok());
  ASSERT_TRUE(ListGroups(stub_.get(), "", &groups, "tok-ops").ok());
  EXPECT_THAT(Names(groups), ElementsAre("b/h"));
}

}  // namespace
}  // namespace msgq::testing
