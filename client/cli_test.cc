// Runs the msgq tool in-process against a fake server.
#include "client/cli.h"

#include <sstream>
#include <string>
#include <vector>

#include "client/testing/fake_messaging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using testing::FakeMessaging;
using testing::Fields;
using ::testing::HasSubstr;
using testing::Rows;

struct Result {
  int code;
  std::string out;
  std::string err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fake_.Start().ok()); }

  Result Run(std::vector<std::string> args) {
    std::ostringstream out, err;
    CliEnvironment env;
    env.default_server = fake_.address();
    const int code = RunCli(args, out, err, env);
    return {code, out.str(), err.str()};
  }

  // An address nothing listens on.
  static std::string DeadAddress() {
    FakeMessaging fake;
    EXPECT_TRUE(fake.Start().ok());
    return fake.address();  // closed when `fake` goes away
  }

  FakeMessaging fake_;
};

TEST_F(CliTest, HelpForTheToolAndEachCommand) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--help"}, {"help"}, {"-h"}}) {
    Result r = Run(args);
    EXPECT_EQ(r.code, kExitOk) << args[0];
    EXPECT_THAT(r.out, HasSubstr("Usage: msgq [--server=HOST:PORT]"));
    EXPECT_THAT(r.out, HasSubstr("Exit codes"));
  }
  for (const char* command :
       {"tables", "tail", "ack", "nack", "extend", "dead", "redrive"}) {
    Result r = Run({command, "--help"});
    EXPECT_EQ(r.code, kExitOk) << command;
    EXPECT_THAT(r.out, HasSubstr(std::string("Usage: msgq ") + command));
    EXPECT_THAT(r.out, HasSubstr("--server=HOST:PORT"));
    EXPECT_EQ(Run({"help", command}).out, r.out);
    EXPECT_EQ(Run({"--help", command}).out, r.out);
  }
  EXPECT_THAT(Run({"tail", "--help"}).out, HasSubstr("--count=N"));
  EXPECT_TRUE(fake_.stream_requests().empty());
}

TEST_F(CliTest, UsageErrors) {
  Result none = Run({});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_THAT(none.err, HasSubstr("Usage:"));

  Result unknown = Run({"frobnicate"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_THAT(unknown.err, HasSubstr("unknown command 'frobnicate'"));

  EXPECT_EQ(Run({"tail"}).code, kExitUsage);
  EXPECT_EQ(Run({"ack", "orders"}).code, kExitUsage);
  EXPECT_EQ(Run({"tables", "extra"}).code, kExitUsage);
  Result bad_flag = Run({"tail", "orders", "--count=many"});
  EXPECT_EQ(bad_flag.code, kExitUsage);
  EXPECT_THAT(bad_flag.err, HasSubstr("--count"));
  EXPECT_THAT(bad_flag.err, HasSubstr("msgq tail --help"));
}

TEST_F(CliTest, TablesPrintsAlignedColumnsOrJson) {
  v1::ListTablesResponse tables;
  v1::TableStatus* t = tables.add_tables();
  t->set_keyspace("msgq");
  t->set_name("orders");
  t->set_loaded(true);
  t->set_discovery("poll");
  fake_.SetTables(tables);

  Result text = Run({"tables"});
  EXPECT_EQ(text.code, kExitOk) << text.err;
  EXPECT_THAT(text.out, HasSubstr("KEYSPACE  NAME    STATUS  DISCOVERY"));
  EXPECT_THAT(text.out, HasSubstr("msgq      orders  loaded  poll"));

  Result json = Run({"tables", "--json"});
  EXPECT_EQ(json.code, kExitOk);
  EXPECT_THAT(json.out, HasSubstr(R"("name":"orders")"));
}

TEST_F(CliTest, ServerFlagBeforeOrAfterTheCommand) {
  const std::string dead = DeadAddress();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--server", dead, "tables"}, {"tables", "--server=" + dead}}) {
    Result r = Run(args);
    EXPECT_EQ(r.code, kExitUnavailable);
    EXPECT_THAT(r.err,
                HasSubstr("msgq tables: server " + dead + " is unavailable"));
  }
}

TEST_F(CliTest, AckPrintsTheCount) {
  Result r = Run({"ack", "orders", "1", "2", "--keyspace=shop"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "acked 2 of 2\n");
  ASSERT_EQ(fake_.ack_requests().size(), 1u);
  EXPECT_EQ(fake_.ack_requests()[0].keyspace(), "shop");
  EXPECT_THAT(fake_.ack_requests()[0].ids(), ElementsAre("1", "2"));
}

TEST_F(CliTest, AckOfAnUnknownTableIsNotFound) {
  fake_.SetAckStatus(
      grpc::Status(grpc::StatusCode::NOT_FOUND, "no message table msgq.nope"));
  Result r = Run({"ack", "nope", "1"});
  EXPECT_EQ(r.code, kExitNotFound);
  EXPECT_EQ(r.err, "msgq ack: NOT_FOUND: no message table msgq.nope\n");
}

TEST_F(CliTest, AckAgainstADownServer) {
  Result r = Run({"ack", "--server", DeadAddress(), "orders", "1"});
  EXPECT_EQ(r.code, kExitUnavailable);
}

TEST_F(CliTest, TailPrintsCountMessagesAsJsonAndAcksThem) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1", "hello"}, {"2", std::nullopt}}),
                                 Rows({{"3", "later"}})},
                   .hold_open = true});
  Result r = Run({"tail", "orders", "--json", "--count=2", "--ack"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "{\"id\":1,\"message\":\"hello\"}\n"
            "{\"id\":2,\"message\":null}\n");
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1", "2"));
  ASSERT_EQ(fake_.stream_requests().size(), 1u);
  EXPECT_EQ(fake_.stream_requests()[0].name(), "orders");
}

TEST_F(CliTest, TailWithoutAckAcksNothing) {
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), Rows({{"7", "two words"}})},
       .hold_open = true});
  Result r = Run({"tail", "orders", "--count", "1", "--keyspace", "shop"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "id=7 message=\"two words\"\n");
  EXPECT_TRUE(fake_.ack_requests().empty());
  EXPECT_EQ(fake_.stream_requests()[0].keyspace(), "shop");
}

TEST_F(CliTest, TailReconnectsAndSaysSo) {
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .end = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                       "server shutting down")});
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"2", "b"}})},
                   .hold_open = true});
  Result r = Run({"tail", "orders", "--count=2"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "id=1 message=a\nid=2 message=b\n");
  EXPECT_THAT(r.err, HasSubstr("stream ended (UNAVAILABLE: server shutting "
                               "down); reconnecting in"));
  EXPECT_THAT(r.err, HasSubstr("reconnected"));
}

TEST_F(CliTest, TailOfAnUnknownTable) {
  fake_.AddStream({.end = grpc::Status(grpc::StatusCode::NOT_FOUND,
                                       "no message table msgq.nope")});
  Result r = Run({"tail", "nope"});
  EXPECT_EQ(r.code, kExitNotFound);
  EXPECT_EQ(r.err, "msgq tail: NOT_FOUND: no message table msgq.nope\n");
}

TEST_F(CliTest, TailOfATableThatFailedToLoad) {
  fake_.AddStream({.end = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                       "vt_ack_wait is missing")});
  Result r = Run({"tail", "broken"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_THAT(r.err, HasSubstr("FAILED_PRECONDITION: vt_ack_wait is missing"));
}

TEST_F(CliTest, TailAgainstADownServerFailsAtOnce) {
  Result r = Run({"tail", "orders", "--server", DeadAddress()});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_THAT(r.err, HasSubstr("is unavailable"));
}

}  // namespace
}  // namespace msgq
