// msgq_concurrency_by / msgq_concurrency: at most N messages of one key in
// flight, counted in memory from the sends and, after ownership is gained,
// from the rows MySQL shows in flight. The gate alone is
// queue/concurrency_gate_test.cc; against MariaDB,
// tests/flow_concurrency_test.cc.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class ConcurrencyTest : public MessageManagerTest {
 protected:
  // ack wait 30 s, min backoff 10 s: a slot not answered frees after 40 s.
  void InitLimited(int n, absl::Duration grace = absl::ZeroDuration()) {
    postpone_grace_ = grace;
    ASSERT_NO_FATAL_FAILURE(
        Init({.batch_size = 10,
              .cache_size = 100,
              .extra = absl::StrCat(",vt_min_backoff=10,msgq_concurrency_by=k,"
                                    "msgq_concurrency=",
                                    n)}));
  }
  // A due row of key `key` (nullopt: NULL), due `age` ago.
  void PutKeyed(const std::string& id, std::optional<std::string> key,
                int64_t age = kSecond, int64_t priority = 0) {
    FakeMessageStore::Row row;
    row.id = id;
    row.key = std::move(key);
    row.time_next = Now() - age;
    row.priority = priority;
    row.payload = "p";
    store_->Put(std::move(row));
  }
  void Nack(const std::string& id, int64_t epoch) {
    MessageManager::NackRequest request;
    request.deliveries.push_back({id, epoch});
    request.delay = absl::Seconds(5);
    manager_->Nack(std::move(request), [](absl::StatusOr<NackCount>) {});
  }
};

TEST_F(ConcurrencyTest, SendsAtMostNOfAKeyAndTheNextAfterAnAck) {
  ASSERT_NO_FATAL_FAILURE(InitLimited(2));
  // Key a has 5 due (older first), b one, and three rows have a NULL key.
  for (int i = 1; i <= 5; ++i) PutKeyed(absl::StrCat(i), "a", 10 * kSecond - i);
  PutKeyed("6", "b");
  PutKeyed("7", std::nullopt);
  PutKeyed("8", std::nullopt);
  PutKeyed("9", std::nullopt);
  auto sub = Subscribe();
  RunOnce();
  // Loaded first (nothing in flight), then the poll: 2 of a, all others.
  EXPECT_EQ(store_->in_flight_reads(), 1);
  ASSERT_EQ(store_->key_polls().size(), 1u);
  EXPECT_THAT(store_->key_polls()[0].ids,
              ElementsAre("1", "2", "6", "7", "8", "9"));
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2", "6", "7", "8", "9"));
  EXPECT_EQ(stats().keys_at_limit, 1);  // a (b has 1 of 2)

  Complete(*sub);
  auto acked = Ack({"1"});
  RunOnce();  // writes postpones and the ack, then polls: a has room for 1
  ASSERT_EQ(store_->key_polls().size(), 2u);
  EXPECT_EQ(store_->key_rooms()[1].For("a"), 1);
  EXPECT_EQ(store_->key_rooms()[1].For("b"), 1);
  EXPECT_EQ(store_->key_rooms()[1].For("c"), 2);
  EXPECT_THAT(store_->key_polls()[1].ids, ElementsAre("3"));
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2", "6", "7", "8", "9", "3"));
  EXPECT_EQ(acked->calls, 1);
  EXPECT_EQ(store_->in_flight_reads(), 1);  // loaded once
  EXPECT_EQ(stats().keys_at_limit, 1);
}

TEST_F(ConcurrencyTest, RowsInFlightInMysqlHoldSlotsAfterARestart) {
  ASSERT_NO_FATAL_FAILURE(InitLimited(3));
  // Another msgqd (or this one before a restart) sent 2 of key a: due again
  // in 20 s; one of b was nacked with a delay and counts as well.
  for (const char* id : {"1", "2"}) {
    FakeMessageStore::Row row;
    row.id = id;
    row.key = "a";
    row.epoch = 1;
    row.time_next = Now() + 20 * kSecond;
    store_->Put(row);
  }
  FakeMessageStore::Row nacked;
  nacked.id = "3";
  nacked.key = "b";
  nacked.epoch = 2;
  nacked.time_next = Now() + 5 * kSecond;
  store_->Put(nacked);
  for (int i = 4; i <= 9; ++i) PutKeyed(absl::StrCat(i), i <= 6 ? "a" : "b");
  auto sub = Subscribe();
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("4", "7", "8"));
  EXPECT_EQ(stats().keys_at_limit, 2);

  // At 21 s the loaded slots ran out (their rows' time_next): a has room
  // for 2 (4 is out), b for 1; the oldest due rows go first.
  Complete(*sub);
  Advance(absl::Seconds(21));
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("4", "7", "8", "5", "6", "9"));
}

TEST_F(ConcurrencyTest, UnansweredSlotsFreeAfterAckWaitAndLeastBackoff) {
  ASSERT_NO_FATAL_FAILURE(InitLimited(1));
  PutKeyed("1", "a", 2 * kSecond);
  PutKeyed("2", "a", kSecond);
  auto sub = Subscribe();
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  Complete(*sub);
  Advance(absl::Seconds(39));
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  EXPECT_EQ(stats().keys_at_limit, 1);
  Advance(absl::Seconds(1));  // 40 s: 30 s ack wait + 10 s backoff
  EXPECT_EQ(stats().keys_at_limit, 0);
  RunOnce();
  // 1 was postponed (to 79 s) by the round at 39 s: 2 is the due one.
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2"));
}

TEST_F(ConcurrencyTest, NacksFreeTheirDeliverysSlotOnlyAndExtendsKeepIt) {
  ASSERT_NO_FATAL_FAILURE(InitLimited(1));
  PutKeyed("1", "a", 3 * kSecond);
  PutKeyed("2", "a", 2 * kSecond);
  PutKeyed("3", "a", kSecond);
  auto sub = Subscribe();
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  Complete(*sub);
  Nack("1", 5);  // a stale delivery's epoch: the slot stays
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  Nack("1", 0);  // the delivery sent (epoch 0)
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2"));
  Complete(*sub);
  // Extended past 40 s: still in flight at 45 s.
  manager_->Extend({{"2", 0}}, absl::Seconds(100),
                   [](absl::StatusOr<int64_t>) {});
  Advance(absl::Seconds(45));
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2"));
  EXPECT_EQ(stats().keys_at_limit, 1);
}

TEST_F(ConcurrencyTest, NothingIsSentUntilTheRowsInFlightAreRead) {
  ASSERT_NO_FATAL_FAILURE(InitLimited(2));
  PutKeyed("1", "a");
  auto sub = Subscribe();
  store_->FailNext(Op::kPollDue, absl::UnavailableError("down"));
  RunOnce();  // the in-flight read fails: no poll, nothing sent
  EXPECT_EQ(store_->in_flight_reads(), 1);
  EXPECT_THAT(store_->key_polls(), IsEmpty());
  EXPECT_THAT(sub->ids(), IsEmpty());
  Advance(absl::Seconds(5));  // past the retry backoff
  RunOnce();
  EXPECT_EQ(store_->in_flight_reads(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
}

TEST_F(ConcurrencyTest, ATableWithoutItPollsAsBefore) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .cache_size = 100}));
  PutDue(Range(1, 3));
  auto sub = Subscribe();
  RunOnce();
  EXPECT_EQ(store_->in_flight_reads(), 0);
  EXPECT_THAT(store_->key_polls(), IsEmpty());
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2", "3"));
  EXPECT_EQ(stats().keys_at_limit, 0);
}

}  // namespace
}  // namespace msgq::manager_test
