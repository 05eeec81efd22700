#include "engine/groups/group_ledger.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

using Taken = GroupLedger::Taken;

Gtid G(const char* text) { return *ParseGtid(text); }
std::string Floor(const GroupLedger& l) { return FormatGtidList(l.floor()); }

GroupLedger At(const char* floor) { return GroupLedger(*ParseGtidList(floor)); }

TEST(GroupLedgerTest, ParseGtid) {
  EXPECT_EQ(ParseGtid("1-2-3").value(), (Gtid{1, 2, 3}));
  EXPECT_EQ(ParseGtid("0-1-2,1-1-3").status().message(),
            "\"0-1-2,1-1-3\" is not one GTID");
  EXPECT_EQ(ParseGtid("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGtid("1-2").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GroupLedgerTest, TakesInCommitOrderAndAcksMoveTheFloor) {
  GroupLedger l = At("0-1-10");
  EXPECT_TRUE(l.Offer(G("0-1-11"), "7"));
  EXPECT_TRUE(l.Offer(G("0-1-11"), "8"));
  EXPECT_TRUE(l.Offer(G("0-1-12"), "3"));
  EXPECT_EQ(l.pending(), 3u);
  EXPECT_EQ(l.Take(1, 2), (std::vector<Taken>{{"7", 0}, {"8", 0}}));
  EXPECT_EQ(l.Take(2, 5), (std::vector<Taken>{{"3", 0}}));
  EXPECT_EQ(l.queued(), 0u);
  EXPECT_EQ(l.held(1), 2u);
  EXPECT_EQ(l.held(2), 1u);

  EXPECT_EQ(l.Ack({"7", "8"}), 2);
  EXPECT_EQ(Floor(l), "0-1-11");
  // 0-1-12 is the last transaction read: more of its rows may follow.
  EXPECT_EQ(l.Ack({"3"}), 1);
  EXPECT_EQ(Floor(l), "0-1-11");
  EXPECT_TRUE(l.See(G("0-1-13")));
  EXPECT_EQ(Floor(l), "0-1-12");
  EXPECT_EQ(l.pending(), 0u);
}

TEST(GroupLedgerTest, AcksOutOfOrderWaitForTheLowest) {
  GroupLedger l = At("0-1-10");
  l.Offer(G("0-1-11"), "a");
  l.Offer(G("0-1-12"), "b");
  l.Offer(G("0-1-13"), "c");
  l.See(G("0-1-14"));
  l.Take(1, 3);
  EXPECT_EQ(l.Ack({"c"}), 1);
  EXPECT_EQ(Floor(l), "0-1-10");
  EXPECT_EQ(l.Ack({"b"}), 1);
  EXPECT_EQ(Floor(l), "0-1-10");
  EXPECT_EQ(l.Ack({"a"}), 1);
  EXPECT_EQ(Floor(l), "0-1-13");
}

TEST(GroupLedgerTest, TransactionsWithoutMessagesArePassed) {
  GroupLedger l = At("0-1-10");
  l.See(G("0-1-11"));
  l.See(G("0-2-12"));
  EXPECT_EQ(Floor(l), "0-1-11");
  l.Offer(G("0-2-13"), "a");
  EXPECT_EQ(Floor(l), "0-2-12");
  // Behind the unsettled 0-2-13, a run of empty transactions is kept as
  // its last one only.
  l.See(G("0-2-14"));
  l.See(G("0-2-15"));
  l.See(G("0-2-16"));
  EXPECT_EQ(Floor(l), "0-2-12");
  EXPECT_EQ(l.Ack({"a"}), 1);
  EXPECT_EQ(Floor(l), "0-2-13");  // 0-2-16 is open
  l.See(G("0-2-17"));
  EXPECT_EQ(Floor(l), "0-2-16");
}

TEST(GroupLedgerTest, AtOrBelowTheFloorIsNotTaken) {
  GroupLedger l = At("0-1-10");
  EXPECT_FALSE(l.Offer(G("0-1-9"), "a"));
  EXPECT_FALSE(l.Offer(G("0-1-10"), "b"));
  EXPECT_FALSE(l.See(G("0-1-10")));
  EXPECT_TRUE(l.Offer(G("0-1-11"), "c"));
  EXPECT_EQ(l.pending(), 1u);
  // A domain the floor does not name is above it.
  EXPECT_TRUE(l.Offer(G("1-1-1"), "d"));
  EXPECT_EQ(l.pending(), 2u);
}

TEST(GroupLedgerTest, DomainsAdvanceIndependently) {
  GroupLedger l = At("0-1-10,1-1-50");
  l.Offer(G("0-1-11"), "a");
  l.Offer(G("1-1-51"), "b");
  l.Offer(G("0-1-12"), "c");
  l.See(G("1-1-52"));
  EXPECT_EQ(l.Take(1, 10), (std::vector<Taken>{{"a", 0}, {"b", 0}, {"c", 0}}));
  EXPECT_EQ(l.Ack({"b", "c"}), 2);
  EXPECT_EQ(Floor(l), "0-1-10,1-1-51");
  EXPECT_EQ(l.Ack({"a"}), 1);
  EXPECT_EQ(Floor(l), "0-1-12,1-1-51");
}

TEST(GroupLedgerTest, ReturnedMessagesGoBackInCommitOrder) {
  GroupLedger l = At("");
  l.Offer(G("0-1-1"), "a");
  l.Offer(G("0-1-2"), "b");
  l.Offer(G("0-1-3"), "c");
  EXPECT_EQ(l.Take(1, 2), (std::vector<Taken>{{"a", 0}, {"b", 0}}));
  EXPECT_EQ(l.Take(2, 1), (std::vector<Taken>{{"c", 0}}));
  EXPECT_EQ(l.Return(1, {"b", "c", "zz"}), 1u);  // c is 2's
  EXPECT_EQ(l.ReturnAll(1), 1u);
  EXPECT_EQ(l.ReturnAll(1), 0u);
  EXPECT_EQ(l.held(1), 0u);
  EXPECT_EQ(l.queued(), 2u);
  EXPECT_EQ(l.Take(3, 10), (std::vector<Taken>{{"a", 1}, {"b", 1}}));
  EXPECT_EQ(l.ReturnAll(2), 1u);
  EXPECT_EQ(l.Take(3, 10), (std::vector<Taken>{{"c", 1}}));
  EXPECT_EQ(l.held(3), 3u);
}

TEST(GroupLedgerTest, AckOfQueuedUnknownAndRepeatedIds) {
  GroupLedger l = At("0-1-0");
  l.Offer(G("0-1-1"), "a");
  l.Offer(G("0-1-1"), "b");
  EXPECT_EQ(l.Ack({"a", "a", "nope"}), 1);  // "a" was queued, not held
  EXPECT_EQ(l.Ack({"a"}), 0);
  EXPECT_EQ(l.Take(1, 10), (std::vector<Taken>{{"b", 0}}));
  EXPECT_EQ(l.Ack({"b"}), 1);
  EXPECT_EQ(Floor(l), "0-1-0");  // 0-1-1 is still open
  l.See(G("0-1-2"));
  EXPECT_EQ(Floor(l), "0-1-1");
}

TEST(GroupLedgerTest, PendingIdOfferedAgainIsRefused) {
  GroupLedger l = At("");
  EXPECT_TRUE(l.Offer(G("0-1-1"), "a"));
  EXPECT_FALSE(l.Offer(G("0-1-2"), "a"));
  EXPECT_EQ(l.pending(), 1u);
  l.Ack({"a"});
  EXPECT_EQ(Floor(l), "0-1-1");  // 0-1-2 is open
  EXPECT_TRUE(l.Offer(G("0-1-3"), "a"));
  EXPECT_EQ(Floor(l), "0-1-2");  // it carried nothing for the group
}

TEST(GroupLedgerTest, RowsOfTheOpenTransactionAfterItsAcks) {
  GroupLedger l = At("0-1-5");
  l.Offer(G("0-1-6"), "a");
  l.Take(1, 1);
  EXPECT_EQ(l.Ack({"a"}), 1);
  // A later rows event of the same transaction is still taken.
  EXPECT_TRUE(l.Offer(G("0-1-6"), "b"));
  l.See(G("0-1-7"));
  EXPECT_EQ(Floor(l), "0-1-5");
  l.Ack({"b"});
  EXPECT_EQ(Floor(l), "0-1-6");
}

TEST(GroupLedgerExceptionsTest, ExpiredHeldMessagesFailAndComeBackWhenDue) {
  GroupLedger l = At("0-1-10");
  l.Offer(G("0-1-11"), "a");
  l.Offer(G("0-1-11"), "b");
  l.Offer(G("0-1-12"), "c");
  EXPECT_EQ(l.Take(1, 2, /*deadline=*/100),
            (std::vector<Taken>{{"a", 0}, {"b", 0}}));
  EXPECT_EQ(l.Take(2, 1, /*deadline=*/90), (std::vector<Taken>{{"c", 0}}));
  EXPECT_TRUE(l.ExpiredAt(89).empty());
  EXPECT_EQ(l.ExpiredAt(100), (std::vector<GroupLedger::Expired>{
                                  {"c", 1, 90}, {"a", 1, 100}, {"b", 1, 100}}));
  EXPECT_TRUE(l.Fail("a", 150));
  EXPECT_TRUE(l.Fail("c", 120));
  EXPECT_EQ(l.held(1), 1u);
  EXPECT_EQ(l.held(2), 0u);
  EXPECT_EQ(l.waiting(), 2u);
  EXPECT_EQ(l.ExpiredAt(100),
            (std::vector<GroupLedger::Expired>{{"b", 1, 100}}));
  EXPECT_TRUE(l.Due(119).empty());
  EXPECT_EQ(l.Due(150), (std::vector<std::string>{"c", "a"}));
  EXPECT_TRUE(l.Resend("c"));
  EXPECT_TRUE(l.Resend("a"));
  EXPECT_FALSE(l.Resend("a"));
  // Back in commit order, their sends counted.
  EXPECT_EQ(l.Take(3, 5, 300), (std::vector<Taken>{{"a", 1}, {"c", 1}}));
  EXPECT_EQ(l.Sends("a"), 2);
}

TEST(GroupLedgerExceptionsTest, TheFloorPassesAFailedMessageOnceRecorded) {
  GroupLedger l = At("0-1-10");
  l.Offer(G("0-1-11"), "a");
  l.Offer(G("0-1-12"), "b");
  l.See(G("0-1-13"));
  l.Take(1, 2);
  EXPECT_EQ(l.Ack({"b"}), 1);
  EXPECT_TRUE(l.Fail("a", 500));
  EXPECT_EQ(Floor(l), "0-1-10");  // not written yet
  l.Recorded("a");
  EXPECT_EQ(Floor(l), "0-1-12");
  EXPECT_EQ(l.pending(), 1u);  // still the group's, as an exception
  // Its ack names it as an exception (a row to delete); the floor stays.
  std::vector<std::string> exceptions;
  EXPECT_EQ(l.Ack({"a"}, &exceptions), 1);
  EXPECT_EQ(exceptions, (std::vector<std::string>{"a"}));
  EXPECT_EQ(Floor(l), "0-1-12");
  EXPECT_EQ(l.pending(), 0u);
}

TEST(GroupLedgerExceptionsTest, DeadMessagesAreNotAckedUntilRedriven) {
  GroupLedger l = At("0-1-10");
  l.Offer(G("0-1-11"), "a");
  l.Take(1, 1);
  EXPECT_TRUE(l.Fail("a", std::nullopt));
  EXPECT_FALSE(l.Fail("a", 5));
  EXPECT_EQ(l.dead(), 1u);
  EXPECT_EQ(l.Sends("a"), std::nullopt);
  EXPECT_EQ(l.Ack({"a"}), 0);
  EXPECT_EQ(l.Redrive({"a", "zz"}, false, 70), (std::vector<std::string>{"a"}));
  EXPECT_EQ(l.dead(), 0u);
  EXPECT_EQ(l.Due(70), (std::vector<std::string>{"a"}));
  EXPECT_EQ(l.Sends("a"), 0);
  EXPECT_TRUE(l.Resend("a"));
  EXPECT_EQ(l.Take(1, 1), (std::vector<Taken>{{"a", 0}}));
}

TEST(GroupLedgerExceptionsTest, LoadedExceptionsHoldNoTransactionBack) {
  GroupLedger l = At("0-1-10");
  EXPECT_TRUE(l.Load("x", 2, 40));
  EXPECT_TRUE(l.Load("y", 3, std::nullopt));
  EXPECT_FALSE(l.Load("x", 1, 1));
  EXPECT_EQ(l.waiting(), 1u);
  EXPECT_EQ(l.dead(), 1u);
  // Its insert read again is not queued a second time, and the floor
  // passes that transaction.
  EXPECT_FALSE(l.Offer(G("0-1-11"), "x"));
  l.See(G("0-1-12"));
  EXPECT_EQ(Floor(l), "0-1-11");
  EXPECT_EQ(l.Redrive({}, /*all=*/true, 50), (std::vector<std::string>{"y"}));
  EXPECT_EQ(l.Due(50), (std::vector<std::string>{"x", "y"}));
}

}  // namespace
}  // namespace msgq
