// The failure commands of the msgq tool (nack, extend, dead, redrive) and
// the epochs `msgq tail` prints, in-process against a fake server.
#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"
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

class CliFailureTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fake_.Start().ok()); }

  Result Run(std::vector<std::string> args) {
    std::ostringstream out, err;
    CliEnvironment env;
    env.default_server = fake_.address();
    const int code = RunCli(args, out, err, env);
    return {code, out.str(), err.str()};
  }

  // Asserts a usage error: exit 2, nothing printed, `message` on stderr
  // followed by the hint, and no call made.
  void ExpectUsageError(std::vector<std::string> args,
                        const std::string& message) {
    const std::string command = args[0];
    Result r = Run(std::move(args));
    EXPECT_EQ(r.code, kExitUsage) << message;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "msgq " + command + ": " + message + "\nRun 'msgq " +
                         command + " --help' for usage.\n");
  }

  FakeMessaging fake_;
};

TEST_F(CliFailureTest, NackSendsTheDeliveriesDelayAndReason) {
  fake_.MarkLost("9");
  Result r = Run({"nack", "orders", "17:0", "a:b:3", "9:2", "--delay=1.5",
                  "--reason=backend down", "--keyspace=shop"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "retried 2, dead 0 of 3\n");
  EXPECT_EQ(r.err, "");
  std::vector<v1::MessageNackRequest> requests = fake_.nack_requests();
  ASSERT_EQ(requests.size(), 1u);
  const v1::MessageNackRequest& n = requests[0];
  EXPECT_EQ(n.keyspace(), "shop");
  EXPECT_EQ(n.name(), "orders");
  ASSERT_EQ(n.deliveries_size(), 3);
  EXPECT_EQ(n.deliveries(0).id(), "17");
  EXPECT_EQ(n.deliveries(0).epoch(), 0);
  EXPECT_EQ(n.deliveries(1).id(), "a:b");  // split at the last ':'
  EXPECT_EQ(n.deliveries(1).epoch(), 3);
  EXPECT_EQ(n.deliveries(2).id(), "9");
  EXPECT_EQ(n.deliveries(2).epoch(), 2);
  ASSERT_TRUE(n.has_delay());
  EXPECT_EQ(n.delay().value(), 1.5);
  EXPECT_EQ(n.reason(), "backend down");
  EXPECT_FALSE(n.dead());
}

TEST_F(CliFailureTest, NackWithoutDelayUsesTheTableBackoffAndDeadKills) {
  Result backoff = Run({"nack", "orders", "1:0"});
  EXPECT_EQ(backoff.code, kExitOk) << backoff.err;
  EXPECT_EQ(backoff.out, "retried 1, dead 0 of 1\n");
  Result dead = Run({"nack", "orders", "2:5", "--dead", "--reason", "poison"});
  EXPECT_EQ(dead.code, kExitOk) << dead.err;
  EXPECT_EQ(dead.out, "retried 0, dead 1 of 1\n");
  Result asap = Run({"nack", "orders", "3:1", "--delay", "0"});
  EXPECT_EQ(asap.code, kExitOk) << asap.err;

  std::vector<v1::MessageNackRequest> requests = fake_.nack_requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_FALSE(requests[0].has_delay());
  EXPECT_EQ(requests[0].reason(), "");
  EXPECT_FALSE(requests[0].dead());
  EXPECT_FALSE(requests[1].has_delay());
  EXPECT_EQ(requests[1].reason(), "poison");
  EXPECT_TRUE(requests[1].dead());
  EXPECT_EQ(requests[1].deliveries(0).epoch(), 5);
  ASSERT_TRUE(requests[2].has_delay());
  EXPECT_EQ(requests[2].delay().value(), 0.0);
}

TEST_F(CliFailureTest, ExtendSendsTheDuration) {
  fake_.MarkLost("2");
  Result r = Run({"extend", "orders", "1:0", "2:4", "--duration=90"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "extended 1 of 2\n");
  std::vector<v1::MessageExtendRequest> requests = fake_.extend_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].name(), "orders");
  EXPECT_EQ(requests[0].duration(), 90.0);
  ASSERT_EQ(requests[0].deliveries_size(), 2);
  EXPECT_EQ(requests[0].deliveries(1).id(), "2");
  EXPECT_EQ(requests[0].deliveries(1).epoch(), 4);
}

TEST_F(CliFailureTest, UsageErrorsExitTwoWithoutACall) {
  ExpectUsageError({"nack"}, "missing TABLE");
  ExpectUsageError({"nack", "orders"}, "missing ID:EPOCH");
  ExpectUsageError({"nack", "orders", "17"},
                   "expected ID:EPOCH (e.g. 17:0), got '17'");
  ExpectUsageError({"nack", "orders", "17:x"},
                   "expected ID:EPOCH (e.g. 17:0), got '17:x'");
  ExpectUsageError({"nack", "orders", "17:-1"},
                   "expected ID:EPOCH (e.g. 17:0), got '17:-1'");
  ExpectUsageError({"nack", "orders", ":1"},
                   "expected ID:EPOCH (e.g. 17:0), got ':1'");
  ExpectUsageError({"nack", "orders", "1:0", "--dead", "--delay=1"},
                   "--delay and --dead exclude each other");
  ExpectUsageError({"nack", "orders", "1:0", "--delay=-1"},
                   "flag '--delay': expected seconds (such as 1.5) or a "
                   "duration (such as 500ms) that is not negative, got '-1'");
  ExpectUsageError({"extend", "orders", "1:0"}, "missing --duration");
  ExpectUsageError({"extend", "orders", "1:0", "--duration=0"},
                   "--duration must be positive");
  ExpectUsageError({"extend", "orders", "--duration=5"}, "missing ID:EPOCH");
  ExpectUsageError({"dead"}, "missing TABLE");
  ExpectUsageError({"dead", "orders", "extra"}, "unexpected argument 'extra'");
  ExpectUsageError({"dead", "orders", "--limit=3000000000"},
                   "--limit 3000000000 is too large");
  ExpectUsageError({"redrive"}, "missing TABLE");
  ExpectUsageError({"redrive", "orders"}, "missing ID (or --all)");
  ExpectUsageError({"redrive", "orders", "1", "--all"},
                   "give ids or --all, not both");
  EXPECT_TRUE(fake_.nack_requests().empty());
  EXPECT_TRUE(fake_.extend_requests().empty());
  EXPECT_TRUE(fake_.list_dead_requests().empty());
  EXPECT_TRUE(fake_.redrive_requests().empty());
}

v1::DeadMessage Dead(std::string id, int64_t epoch, std::string error) {
  v1::DeadMessage m;
  m.set_id(std::move(id));
  m.set_epoch(epoch);
  m.set_last_error(std::move(error));
  return m;
}

TEST_F(CliFailureTest, DeadListsAPageAsATableOrJson) {
  fake_.SetDeadMessages({Dead("1", 5, "timeout talking to billing"),
                         Dead("2", 0, ""), Dead("3", 1, "bad")});
  Result text = Run({"dead", "orders", "--keyspace=shop"});
  EXPECT_EQ(text.code, kExitOk) << text.err;
  EXPECT_EQ(text.out,
            "ID  EPOCH  DIED  LAST_ERROR\n"
            "1   5      -     timeout talking to billing\n"
            "2   0      -     -\n"
            "3   1      -     bad\n");
  EXPECT_EQ(text.err, "");

  Result page = Run({"dead", "orders", "--limit=1", "--after", "1"});
  EXPECT_EQ(page.code, kExitOk) << page.err;
  EXPECT_EQ(page.out,
            "ID  EPOCH  DIED  LAST_ERROR\n"
            "2   0      -     -\n");
  EXPECT_EQ(page.err, "msgq dead: more may follow: --after=2\n");

  Result json = Run({"dead", "orders", "--json", "--after=2"});
  EXPECT_EQ(json.code, kExitOk) << json.err;
  EXPECT_EQ(json.out,
            "{\"messages\":[{\"id\":\"3\",\"epoch\":1,\"last_error\":\"bad\","
            "\"time_dead\":0,\"time_created\":0}]}\n");

  std::vector<v1::ListDeadRequest> requests = fake_.list_dead_requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].keyspace(), "shop");
  EXPECT_EQ(requests[0].name(), "orders");
  EXPECT_EQ(requests[0].limit(), 0);
  EXPECT_EQ(requests[0].after_id(), "");
  EXPECT_EQ(requests[1].limit(), 1);
  EXPECT_EQ(requests[1].after_id(), "1");
}

TEST_F(CliFailureTest, RedriveIdsOrAll) {
  fake_.SetDeadMessages({Dead("1", 5, ""), Dead("2", 0, ""), Dead("3", 1, "")});
  Result ids = Run({"redrive", "orders", "2", "7"});
  EXPECT_EQ(ids.code, kExitOk) << ids.err;
  EXPECT_EQ(ids.out, "redriven 1 of 2\n");
  Result all = Run({"redrive", "--all", "orders"});
  EXPECT_EQ(all.code, kExitOk) << all.err;
  EXPECT_EQ(all.out, "redriven 2\n");
  std::vector<v1::RedriveRequest> requests = fake_.redrive_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0].ids(), ElementsAre("2", "7"));
  EXPECT_FALSE(requests[0].all());
  EXPECT_TRUE(requests[1].ids().empty());
  EXPECT_TRUE(requests[1].all());
}

TEST_F(CliFailureTest, ServerErrorsMapToExitCodes) {
  fake_.SetFailureRpcStatus(
      grpc::Status(grpc::StatusCode::NOT_FOUND, "no message table msgq.nope"));
  Result nack = Run({"nack", "nope", "1:0"});
  EXPECT_EQ(nack.code, kExitNotFound);
  EXPECT_EQ(nack.err, "msgq nack: NOT_FOUND: no message table msgq.nope\n");
  EXPECT_EQ(Run({"dead", "nope"}).code, kExitNotFound);

  fake_.SetFailureRpcStatus(
      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method"));
  Result old = Run({"redrive", "orders", "--all"});
  EXPECT_EQ(old.code, kExitError);
  EXPECT_EQ(old.err, "msgq redrive: UNIMPLEMENTED: unknown method\n");

  fake_.SetFailureRpcStatus(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "duration too long"));
  Result extend = Run({"extend", "orders", "1:0", "--duration=1e6"});
  EXPECT_EQ(extend.code, kExitError);
  EXPECT_EQ(extend.err, "msgq extend: INVALID_ARGUMENT: duration too long\n");
}

TEST_F(CliFailureTest, TailPrintsEachRowsEpoch) {
  v1::MessageStreamResponse rows = Rows({{"1", "a"}, {"2", "b c"}});
  rows.mutable_rows(1)->set_epoch(3);
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), rows}, .hold_open = true});
  Result r = Run({"tail", "orders", "--count=2"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  // A first delivery (epoch 0) prints as before epochs were shown.
  EXPECT_EQ(r.out, "id=1 message=a\nid=2 message=\"b c\" epoch=3\n");
  // --json prints the row's columns only (as `python3 -m msgq` does).
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), rows}, .hold_open = true});
  Result json = Run({"tail", "orders", "--count=1", "--json"});
  EXPECT_EQ(json.code, kExitOk) << json.err;
  EXPECT_EQ(json.out, "{\"id\":1,\"message\":\"a\"}\n");
  EXPECT_THAT(Run({"help"}).out, HasSubstr("nack TABLE ID:EPOCH..."));
}

}  // namespace
}  // namespace msgq
