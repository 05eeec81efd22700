// SettlementLedger and the postpone grace: TakePostpones(sent_by) takes only
// the postpones of sends made by the cutoff (settlement_ledger.h).
#include <string>
#include <vector>

#include "engine/queue/settlement_ledger.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

TEST(SettlementLedgerGraceTest, OnlySendsMadeByTheCutoffAreTaken) {
  SettlementLedger ledger;
  ledger.Sent("a", 0, kT0);
  ledger.Sent("b", 3, kT0 + absl::Milliseconds(10));
  EXPECT_EQ(ledger.OldestOwedAt(), kT0);
  EXPECT_THAT(ledger.TakePostpones(kT0 + absl::Milliseconds(5)),
              ElementsAre(Pair("a", 0)));
  EXPECT_EQ(ledger.OldestOwedAt(), kT0 + absl::Milliseconds(10));
  EXPECT_EQ(ledger.owed(), 1u);
  EXPECT_THAT(ledger.TakePostpones(kT0 + absl::Milliseconds(10)),
              ElementsAre(Pair("b", 3)));
  EXPECT_EQ(ledger.OldestOwedAt(), absl::InfiniteFuture());
  EXPECT_FALSE(ledger.HasOwed());
}

TEST(SettlementLedgerGraceTest, AnAckWithinTheGraceCancelsThePostpone) {
  SettlementLedger ledger;
  ledger.Sent("a", 0, kT0);
  SettlementLedger::SettleTicket ticket = ledger.BeginAck({"a"});
  EXPECT_THAT(ticket.cancelled, ElementsAre(Pair("a", 0)));
  EXPECT_THAT(ledger.TakePostpones(), IsEmpty());
  EXPECT_THAT(ledger.SettleDone(ticket, SettlementLedger::Outcome::kCommitted),
              ElementsAre("a"));
  EXPECT_FALSE(ledger.InFlight("a"));
}

TEST(SettlementLedgerGraceTest, AFailedAckOwesThePostponeFromItsSendTime) {
  SettlementLedger ledger;
  ledger.Sent("a", 0, kT0);
  SettlementLedger::SettleTicket ticket = ledger.BeginAck({"a"});
  EXPECT_THAT(ledger.TakePostpones(kT0 + absl::Seconds(1)), IsEmpty());
  EXPECT_THAT(ledger.SettleDone(ticket, SettlementLedger::Outcome::kTransient),
              IsEmpty());
  EXPECT_EQ(ledger.OldestOwedAt(), kT0);
  EXPECT_THAT(ledger.TakePostpones(kT0), ElementsAre(Pair("a", 0)));
}

TEST(SettlementLedgerGraceTest, AHoldTakesItsPostponeWhateverTheTime) {
  SettlementLedger ledger;
  ledger.Sent("a", 0, kT0 + absl::Seconds(1));
  ledger.Sent("b", 0, kT0 + absl::Seconds(1));
  SettlementLedger::SettleTicket hold = ledger.BeginHold({"a"});
  EXPECT_THAT(hold.cancelled, IsEmpty());
  EXPECT_THAT(ledger.TakePostpones(kT0), ElementsAre(Pair("a", 0)));
  EXPECT_EQ(ledger.OldestOwedAt(), kT0 + absl::Seconds(1));  // b's
  EXPECT_TRUE(ledger.InFlight("b"));
}

}  // namespace
}  // namespace msgq
