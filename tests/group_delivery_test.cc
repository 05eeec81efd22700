// Live delivery to consumer groups end to end (docs/design/consumer-groups.md,
// build order step 2): a real MariaDB and msgqd; two groups on one table
// each get every committed insert once, in commit order, none rolled back;
// each group's acks are its own and move its floor in msgq_groups; the
// default group is untouched by them; a group resumes from its stored
// floor after msgqd is killed.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/group_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::UnorderedElementsAreArray;

class GroupDeliveryTest : public GroupTest {
 protected:
  // Rows of orders still unacked and never sent (the default group's
  // state: time_acked NULL, epoch 0).
  int64_t UntouchedRows() {
    absl::StatusOr<QueryResult> r = db_->Query(
        "SELECT COUNT(*) FROM msgq.orders WHERE time_acked IS NULL AND "
        "epoch = 0");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return -1;
    return std::stoll(r->rows[0][0].value_or("-1"));
  }

  // Inserts 1..3 (one transaction), then 20 and 21 with 21 committed
  // first, a rolled-back 30, then 4..5. Sets the GTID after each commit.
  void InsertInterleaved(std::string* after_1_3, std::string* after_21,
                         std::string* after_20, std::string* after_4_5) {
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 3));
    *after_1_3 = BinlogPosition();
    absl::StatusOr<std::unique_ptr<MysqlConnection>> a = db_->Connect();
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE((*a)->Execute("BEGIN").ok());
    ASSERT_TRUE(
        (*a)->Execute("INSERT INTO msgq.orders (id, message) VALUES (20, '{}')")
            .ok());
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 21, 21));
    *after_21 = BinlogPosition();
    ASSERT_TRUE((*a)->Execute("COMMIT").ok());
    *after_20 = BinlogPosition();
    ASSERT_TRUE((*a)->Execute("BEGIN").ok());
    ASSERT_TRUE(
        (*a)->Execute("INSERT INTO msgq.orders (id, message) VALUES (30, '{}')")
            .ok());
    ASSERT_TRUE((*a)->Execute("ROLLBACK").ok());
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 4, 5));
    *after_4_5 = BinlogPosition();
  }
};

const std::vector<std::string> kCommitOrder = {"1",  "2", "3", "21",
                                               "20", "4", "5"};

TEST_F(GroupDeliveryTest, TwoGroupsEachGetEveryCommittedInsertOnce) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());
  const std::string billing_created = BinlogPosition();
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  const std::string created = BinlogPosition();
  ASSERT_NO_FATAL_FAILURE(CreateGroup("search"));
  EXPECT_EQ(Floor("billing"), billing_created);
  EXPECT_EQ(Floor("search"), created);
  GroupStream billing(stub_.get(), "orders", "billing");
  GroupStream search(stub_.get(), "orders", "search");

  std::string g13, g21, g20, g45;
  ASSERT_NO_FATAL_FAILURE(InsertInterleaved(&g13, &g21, &g20, &g45));
  ASSERT_TRUE(billing.WaitForRows(7)) << server_->Log();
  ASSERT_TRUE(search.WaitForRows(7)) << server_->Log();
  EXPECT_THAT(billing.ids(), ElementsAreArray(kCommitOrder));
  EXPECT_THAT(search.ids(), ElementsAreArray(kCommitOrder));
  EXPECT_THAT(billing.epochs(), ElementsAre(0, 0, 0, 0, 0, 0, 0));

  // billing acks everything: its floor passes every transaction but the
  // last one read (more of its rows could still have come).
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("billing", kCommitOrder, &acked).ok());
  EXPECT_EQ(acked, 7);
  EXPECT_EQ(Floor("billing"), g20);
  ASSERT_TRUE(AckGroup("billing", kCommitOrder, &acked).ok());
  EXPECT_EQ(acked, 0);
  EXPECT_EQ(Floor("search"), created);

  // search acks out of order: the floor waits for the lowest.
  ASSERT_TRUE(AckGroup("search", {"4", "5", "20"}, &acked).ok());
  EXPECT_EQ(acked, 3);
  EXPECT_EQ(Floor("search"), created);
  ASSERT_TRUE(AckGroup("search", {"1", "2", "3"}, &acked).ok());
  EXPECT_EQ(acked, 3);
  EXPECT_EQ(Floor("search"), g13);
  ASSERT_TRUE(AckGroup("search", {"21"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  EXPECT_EQ(Floor("search"), g20);

  // The default group saw none of it: every row unacked and unsent.
  EXPECT_EQ(UntouchedRows(), 7);
  StreamCollector fallback(stub_.get(), "orders", "msgq");
  ASSERT_TRUE(fallback.WaitForRows(7, kWait)) << server_->Log();
  EXPECT_THAT(fallback.ids(), UnorderedElementsAreArray(kCommitOrder));
  ASSERT_TRUE(AckIds(stub_.get(), "orders", kCommitOrder, &acked, "msgq").ok());
  EXPECT_EQ(acked, 7);

  // A later insert reaches both groups and the default group; the groups
  // got nothing else (the default group's sends and acks are updates, not
  // inserts).
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 6, 6));
  ASSERT_TRUE(billing.WaitForRows(8)) << server_->Log();
  ASSERT_TRUE(search.WaitForRows(8)) << server_->Log();
  ASSERT_TRUE(fallback.WaitForRows(8, kWait)) << server_->Log();
  std::vector<std::string> all = kCommitOrder;
  all.push_back("6");
  EXPECT_THAT(billing.ids(), ElementsAreArray(all));
  EXPECT_THAT(search.ids(), ElementsAreArray(all));
  ASSERT_TRUE(AckGroup("billing", {"6"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  ASSERT_TRUE(AckGroup("search", {"6"}, &acked).ok());
  EXPECT_EQ(acked, 1);
}

TEST_F(GroupDeliveryTest, AStreamThatEndsGivesItsMessagesToTheNext) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  auto first = std::make_unique<GroupStream>(stub_.get(), "orders", "billing");
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 3));
  ASSERT_TRUE(first->WaitForRows(3)) << server_->Log();
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("billing", {"2"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  first.reset();  // cancels: 1 and 3 go back to the group

  GroupStream second(stub_.get(), "orders", "billing");
  ASSERT_TRUE(second.WaitForRows(2)) << server_->Log();
  EXPECT_THAT(second.ids(), ElementsAre("1", "3"));
  EXPECT_THAT(second.epochs(), ElementsAre(1, 1));
}

TEST_F(GroupDeliveryTest, ErrorsNameTheGroups) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  ASSERT_NO_FATAL_FAILURE(CreateGroup("search"));

  GroupStream unknown(stub_.get(), "orders", "nope");
  ASSERT_TRUE(unknown.WaitForEnd());
  EXPECT_EQ(unknown.status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(unknown.status().error_message(),
            "group \"nope\" of `msgq`.`orders` not found; its groups: "
            "billing, search");

  GroupStream malformed(stub_.get(), "orders", "-x");
  ASSERT_TRUE(malformed.WaitForEnd());
  EXPECT_EQ(malformed.status().error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  int64_t acked = -1;
  grpc::Status ack = AckGroup("nope", {"1"}, &acked);
  EXPECT_EQ(ack.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ack.error_message(),
            "group \"nope\" of `msgq`.`orders` not found; its groups: "
            "billing, search");

  grpc::ClientContext ctx;
  v1::MessageNackRequest nack;
  nack.set_keyspace("msgq");
  nack.set_name("orders");
  nack.set_group("billing");
  nack.add_deliveries()->set_id("1");
  v1::MessageNackResponse nacked;
  grpc::Status s = stub_->MessageNack(&ctx, nack, &nacked);
  EXPECT_TRUE(s.ok()) << s.error_message();  // nothing pending: 0
  EXPECT_EQ(nacked.retried(), 0);
  EXPECT_EQ(nacked.dead(), 0);
  grpc::ClientContext ctx2;
  nack.set_group("nope");
  s = stub_->MessageNack(&ctx2, nack, &nacked);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GroupDeliveryTest, KilledMsgqdResumesTheGroupFromItsFloor) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());
  ASSERT_NO_FATAL_FAILURE(CreateGroup("billing"));
  std::string g13, g6;
  {
    GroupStream billing(stub_.get(), "orders", "billing");
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 3));
    g13 = BinlogPosition();
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 4, 5));
    ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 6, 6));
    g6 = BinlogPosition();
    ASSERT_TRUE(billing.WaitForRows(6)) << server_->Log();
    int64_t acked = -1;
    ASSERT_TRUE(AckGroup("billing", {"1", "2", "3"}, &acked).ok());
    EXPECT_EQ(acked, 3);
    EXPECT_EQ(Floor("billing"), g13);
    // Above an unsettled 4: kept in memory only.
    ASSERT_TRUE(AckGroup("billing", {"5"}, &acked).ok());
    EXPECT_EQ(acked, 1);
    EXPECT_EQ(Floor("billing"), g13);
    server_->Kill();
  }
  ASSERT_NO_FATAL_FAILURE(StartServer({"--leases=false"}));
  ASSERT_NO_FATAL_FAILURE(WaitForBinlog("orders"));
  GroupStream billing(stub_.get(), "orders", "billing");
  ASSERT_TRUE(billing.WaitForRows(3)) << server_->Log();
  // 5 was acked, but its ack was not covered by a floor write.
  EXPECT_THAT(billing.ids(), ElementsAre("4", "5", "6"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 7, 7));
  ASSERT_TRUE(billing.WaitForRows(4)) << server_->Log();
  EXPECT_THAT(billing.ids(), ElementsAre("4", "5", "6", "7"));
  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("billing", {"4", "5", "6"}, &acked).ok());
  EXPECT_EQ(acked, 3);
  EXPECT_EQ(Floor("billing"), g6);  // 7 is the last transaction read

  // The binlog read again reached the groups alone: the default group
  // gets every row once.
  EXPECT_EQ(UntouchedRows(), 7);
  StreamCollector fallback(stub_.get(), "orders", "msgq");
  ASSERT_TRUE(fallback.WaitForRows(7, kWait)) << server_->Log();
  EXPECT_THAT(fallback.ids(),
              UnorderedElementsAreArray({"1", "2", "3", "4", "5", "6", "7"}));
}

// A group with a filter receives exactly the inserts that match it, and
// the ones it leaves out do not hold its floor back; a group without one
// receives them all.
TEST_F(GroupDeliveryTest, AFilterDeliversExactlyTheMatchingInserts) {
  ASSERT_NO_FATAL_FAILURE(StartWithOrders());
  {
    grpc::ClientContext ctx;
    v1::CreateGroupRequest request;
    request.set_keyspace("msgq");
    request.set_name("orders");
    request.set_group("evens");
    request.set_filter("id IN (2, 4, 6)");
    v1::CreateGroupResponse response;
    grpc::Status s = stub_->CreateGroup(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.group().filter(), "id IN (2, 4, 6)");
  }
  ASSERT_NO_FATAL_FAILURE(CreateGroup("all"));
  GroupStream evens(stub_.get(), "orders", "evens");
  GroupStream all(stub_.get(), "orders", "all");
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 1, 6));
  const std::string inserted = BinlogPosition();
  ASSERT_TRUE(all.WaitForRows(6)) << server_->Log();
  ASSERT_TRUE(evens.WaitForRows(3)) << server_->Log();
  EXPECT_THAT(evens.ids(), ElementsAre("2", "4", "6"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("orders", 7, 7));
  ASSERT_TRUE(all.WaitForRows(7)) << server_->Log();
  EXPECT_THAT(evens.ids(), ElementsAre("2", "4", "6"));

  int64_t acked = -1;
  ASSERT_TRUE(AckGroup("evens", {"2", "4", "6"}, &acked).ok());
  EXPECT_EQ(acked, 3);
  // Past the six inserts: 7 is the last transaction read.
  EXPECT_EQ(Floor("evens"), inserted);
}

}  // namespace
}  // namespace msgq::testing
