// A consumer group's own retries and dead letters end to end
// (docs/design/consumer-groups.md#slice-3-exceptions): a real MariaDB and
// msgqd. A group's unacked message is sent again after the table's ack
// wait and backoff to that group alone; a nack with a group retries after
// its delay; past msgq_max_attempts the message is dead for that group
// only, listed and redriven through ListDead and Redrive with `group`;
// each exception is one row of msgq_group_messages, deleted by the ack,
// and read back after msgqd is killed.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/group_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Ack wait 1 s, then 0.2 s of backoff: a send not acked is sent again
// 1.2 s later.
constexpr char kShortWaits[] =
    "vt_ack_wait=1,vt_min_backoff=0.2,vt_max_backoff=0.2";

class GroupRetryTest : public GroupTest {
 protected:
  grpc::Status Nack(const std::string& group, const std::string& id,
                    int64_t epoch, std::optional<double> delay,
                    const std::string& reason, v1::MessageNackResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    v1::MessageNackRequest request;
    request.set_keyspace("msgq");
    request.set_name("orders");
    request.set_group(group);
    v1::Delivery* d = request.add_deliveries();
    d->set_id(id);
    d->set_epoch(epoch);
    if (delay.has_value()) request.mutable_delay()->set_value(*delay);
    request.set_reason(reason);
    return stub_->MessageNack(&ctx, request, out);
  }

  grpc::Status ListDead(const std::string& group, v1::ListDeadResponse* out) {
    grpc::ClientContext ctx;
    v1::ListDeadRequest request;
    request.set_keyspace("msgq");
    request.set_name("orders");
    request.set_group(group);
    return stub_->ListDead(&ctx, request, out);
  }

  // The group's rows of msgq_group_messages, as "id:attempts:dead:error"
  // (dead: 1 when time_dead is set and time_next NULL).
  std::vector<std::string> Exceptions(const std::string& group) {
    absl::StatusOr<QueryResult> r = db_->Query(absl::StrCat(
        "SELECT id, attempts, time_dead IS NOT NULL AND time_next IS NULL,"
        " last_error FROM msgq.msgq_group_messages WHERE table_name ="
        " 'orders' AND group_name = '",
        group, "' ORDER BY id"));
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<std::string> out;
    if (!r.ok()) return out;
    for (const auto& row : r->rows) {
      out.push_back(absl::StrCat(
          row[0].value_or("<NULL>"), ":", row[1].value_or("<NULL>"), ":",
          row[2].value_or("<NULL>"), ":", row[3].value_or("<NULL>")));
    }
    return out;
  }

  // The default group's state of row `id`: "epoch:acked".
  std::string DefaultState(int id) {
    absl::StatusOr<QueryResult> r = db_->Query(absl::StrCat(
        "SELECT epoch, time_acked IS NOT NULL FROM msgq.orders WHERE id = ",
        id));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->rows.size() != 1) return "<none>";
    return absl::StrCat(r->rows[0][0].value_or("<NULL>"), ":",
                        r->rows[0][1].value_or("<NULL>"));
  }
};

TEST_F(GroupRetryTest, AnUnackedMessageIsResentToItsGroupOnly) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders(kShortWaits));
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  ASSERT_NO_FATAL_FAILURE(CreateGroup("search"));
  GroupStream billing(stub_.get(), "orders", "billing");
  GroupStream search(stub_.get(), "orders", "search");
  StreamCollector fallback(stub_.get(), "orders", "msgq");
  ASSERT_TRUE(fallback.WaitForFields(kWait));
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 1));

  ASSERT_TRUE(search.WaitForRows(1)) << server_->Log();
  ASSERT_TRUE(fallback.WaitForRows(1, kWait)) << server_->Log();
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("search", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  ASSERT_TRUE(AckIds(stub_.get(), "orders", {"1"}, &acked, "msgq").ok());
  EXPECT_EQ(acked, 1);

  // billing never acks: its message comes back after 1.2 s, twice.
  ASSERT_TRUE(billing.WaitForRows(3)) << server_->Log();
  EXPECT_THAT(billing.ids(), ElementsAre("1", "1", "1"));
  EXPECT_THAT(billing.epochs(), ElementsAre(0, 1, 2));
  const std::vector<absl::Time> at = billing.arrivals();
  EXPECT_GE(at[1] - at[0], absl::Milliseconds(1100));
  EXPECT_GE(at[2] - at[1], absl::Milliseconds(1100));
  // One row for the message, its attempts those of the last timeout.
  ASSERT_TRUE(
      Eventually([&] { return !Exceptions("billing").empty(); }, kWait));
  EXPECT_THAT(Exceptions("billing"),
              ElementsAre(::testing::MatchesRegex("1:[123]:0:")));
  EXPECT_THAT(Exceptions("search"), ElementsAre());

  // Nobody else saw it again: search and the default group each once.
  EXPECT_THAT(search.ids(), ElementsAre("1"));
  EXPECT_THAT(fallback.ids(), ElementsAre("1"));
  // Acked once by the default group; its postpone (epoch 1) is written
  // unless the ack came first and made it pointless.
  EXPECT_THAT(DefaultState(1), ::testing::MatchesRegex("[01]:1"));

  // The ack deletes the row before it is answered.
  ASSERT_TRUE(AckGroup("billing", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  EXPECT_THAT(Exceptions("billing"), ElementsAre());
}

TEST_F(GroupRetryTest, ANackWithAGroupRetriesAfterItsDelay) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());  // ack wait 30 s
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  GroupStream billing(stub_.get(), "orders", "billing");
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 2));
  ASSERT_TRUE(billing.WaitForRows(2)) << server_->Log();

  v1::MessageNackResponse nacked;
  // A stale delivery (epoch 1 was never sent) changes nothing.
  ASSERT_TRUE(Nack("billing", "1", 1, 0.5, "", &nacked).ok());
  EXPECT_EQ(nacked.retried(), 0);
  grpc::Status bad = Nack("billing", "1", 0, -1, "", &nacked);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  const absl::Time nacked_at = absl::Now();
  grpc::Status s = Nack("billing", "1", 0, 0.5, "try later", &nacked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(nacked.retried(), 1);
  EXPECT_EQ(nacked.dead(), 0);
  // Written before the answer.
  EXPECT_THAT(Exceptions("billing"), ElementsAre("1:1:0:try later"));
  ASSERT_TRUE(billing.WaitForRows(3)) << server_->Log();
  EXPECT_THAT(billing.ids(), ElementsAre("1", "2", "1"));
  EXPECT_THAT(billing.epochs(), ElementsAre(0, 0, 1));
  EXPECT_GE(billing.arrivals()[2] - nacked_at, absl::Milliseconds(500));

  // The default group still has both, untouched.
  EXPECT_EQ(DefaultState(1), "0:0");
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("billing", {"1", "2"}, &acked).ok());
  EXPECT_EQ(acked, 2);
  EXPECT_THAT(Exceptions("billing"), ElementsAre());
}

TEST_F(GroupRetryTest, PastMaxAttemptsAMessageDiesForItsGroupOnly) {
  ASSERT_NO_FATAL_FAILURE(
      StartWithOrders(absl::StrCat(kShortWaits, ",msgq_max_attempts=2")));
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  ASSERT_NO_FATAL_FAILURE(CreateGroup("search"));
  GroupStream billing(stub_.get(), "orders", "billing");
  GroupStream search(stub_.get(), "orders", "search");
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 1));
  ASSERT_TRUE(search.WaitForRows(1)) << server_->Log();
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("search", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 1);

  ASSERT_TRUE(billing.WaitForRows(2)) << server_->Log();
  ASSERT_TRUE(Eventually(
      [&] {
        return Exceptions("billing") ==
               std::vector<std::string>{
                   "1:2:1:not acked after 2 sends (msgq_max_attempts=2)"};
      },
      kWait))
      << ::testing::PrintToString(Exceptions("billing"));
  v1::ListDeadResponse dead;
  ASSERT_TRUE(ListDead("billing", &dead).ok());
  ASSERT_EQ(dead.messages_size(), 1);
  EXPECT_EQ(dead.messages(0).id(), "1");
  EXPECT_EQ(dead.messages(0).epoch(), 2);
  EXPECT_EQ(dead.messages(0).last_error(),
            "not acked after 2 sends (msgq_max_attempts=2)");
  EXPECT_GT(dead.messages(0).time_dead(), 0);
  v1::ListDeadResponse none;
  ASSERT_TRUE(ListDead("search", &none).ok());
  EXPECT_EQ(none.messages_size(), 0);
  v1::ListDeadResponse default_dead;
  ASSERT_TRUE(ListDead("", &default_dead).ok());
  EXPECT_EQ(default_dead.messages_size(), 0);
  // A dead message is not acked.
  ASSERT_TRUE(AckGroup("billing", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 0);

  // Another group still gets and acks new messages, and so does billing.
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 2, 2));
  ASSERT_TRUE(search.WaitForRows(2)) << server_->Log();
  ASSERT_TRUE(billing.WaitForRows(3)) << server_->Log();
  ASSERT_TRUE(AckGroup("search", {"2"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  ASSERT_TRUE(AckGroup("billing", {"2"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  EXPECT_THAT(search.ids(), ElementsAre("1", "2"));

  // Redriven, it is read from the table by id and sent with epoch 0.
  grpc::ClientContext ctx;
  v1::RedriveRequest redrive;
  redrive.set_keyspace("msgq");
  redrive.set_name("orders");
  redrive.set_group("billing");
  redrive.add_ids("1");
  v1::RedriveResponse redriven;
  grpc::Status s = stub_->Redrive(&ctx, redrive, &redriven);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(redriven.redriven(), 1);
  ASSERT_TRUE(billing.WaitForRows(4)) << server_->Log();
  EXPECT_THAT(billing.ids(), ElementsAre("1", "1", "2", "1"));
  EXPECT_THAT(billing.epochs(), ElementsAre(0, 1, 0, 0));
  ASSERT_TRUE(AckGroup("billing", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  EXPECT_THAT(Exceptions("billing"), ElementsAre());
}

TEST_F(GroupRetryTest, KilledMsgqdSendsTheStoredExceptionsAgain) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());  // ack wait 30 s
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  std::string after_2;
  {
    GroupStream billing(stub_.get(), "orders", "billing");
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 1));
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 2, 2));
    after_2 = BinlogPosition();
    ASSERT_TRUE(billing.WaitForRows(2)) << server_->Log();
    v1::MessageNackResponse nacked;
    ASSERT_TRUE(Nack("billing", "1", 0, 2.0, "later", &nacked).ok());
    EXPECT_EQ(nacked.retried(), 1);
    int64_t acked = -1;
    ASSERT_TRUE(AckGroup("billing", {"2"}, &acked).ok());
    EXPECT_EQ(acked, 1);
    // A third transaction closes the second: the floor passes both, the
    // first because its exception row is written.
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 3, 3));
    ASSERT_TRUE(billing.WaitForRows(3)) << server_->Log();
    ASSERT_TRUE(AckGroup("billing", {"3"}, &acked).ok());
    EXPECT_EQ(acked, 1);
    EXPECT_EQ(Floor("billing"), after_2);
    EXPECT_THAT(Exceptions("billing"), ElementsAre("1:1:0:later"));
    server_->Kill();
  }
  ASSERT_NO_FATAL_FAILURE(StartServer({"--leases=false"}));
  ASSERT_NO_FATAL_FAILURE(WaitForBinlog("orders"));
  GroupStream billing(stub_.get(), "orders", "billing");
  // 3 is read again from the binlog (above the floor); 1, below it, is
  // read from the table by id once due.
  ASSERT_TRUE(billing.WaitForRows(2)) << server_->Log();
  EXPECT_THAT(billing.ids(), UnorderedElementsAre("1", "3"));
  std::vector<std::string> ids = billing.ids();
  std::vector<int64_t> epochs = billing.epochs();
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(epochs[i], ids[i] == "1" ? 1 : 0) << ids[i];
  }
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("billing", {"1", "3"}, &acked).ok());
  EXPECT_EQ(acked, 2);
  EXPECT_THAT(Exceptions("billing"), ElementsAre());
}

}  // namespace
}  // namespace msgq::testing
