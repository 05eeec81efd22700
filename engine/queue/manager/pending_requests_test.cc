#include "engine/queue/manager/pending_requests.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

using Ids = std::vector<std::string>;

PendingAck Ack(Ids ids, std::vector<std::string>* answers) {
  PendingAck a;
  a.ticket.ids = std::move(ids);
  a.done = [answers](absl::StatusOr<int64_t> n) {
    answers->push_back("ack " + n.status().ToString());
  };
  return a;
}

TEST(PendingRequestsTest, AdmitsWithinBothBounds) {
  PendingRequests r(/*max_requests=*/2, /*max_ids=*/5);
  EXPECT_EQ(r.Admit(3, "t"), absl::OkStatus());
  EXPECT_EQ(r.admitted_ids(), 3u);
  // 3 + 3 ids > 5: refused, nothing counted.
  EXPECT_EQ(r.Admit(3, "table `k`.`t`"),
            absl::ResourceExhaustedError(
                "too many requests waiting for table `k`.`t`"));
  EXPECT_EQ(r.admitted_ids(), 3u);
  EXPECT_EQ(r.Admit(2, "t"), absl::OkStatus());
  EXPECT_EQ(r.admitted_ids(), 5u);
  std::vector<std::string> answers;
  r.Add(Ack({"1"}, &answers));
  r.Add(PendingDeadList{"", 10, nullptr});
  // Two requests waiting: even a request of no ids is refused.
  EXPECT_EQ(r.Admit(0, "t").code(), absl::StatusCode::kResourceExhausted);
  r.Settled(4);
  EXPECT_EQ(r.admitted_ids(), 1u);
  r.Settled(7);  // never below zero
  EXPECT_EQ(r.admitted_ids(), 0u);
}

TEST(PendingRequestsTest, RoundsTakeAcksAndOthersApart) {
  PendingRequests r(100, 100);
  std::vector<std::string> answers;
  EXPECT_TRUE(r.empty());
  r.Add(Ack({"1", "2"}, &answers));
  EXPECT_TRUE(r.acks_waiting());
  EXPECT_FALSE(r.others_waiting());
  PendingNack nack;
  nack.group.nacks.push_back(Nack{"3", 1, std::nullopt});
  nack.group.reason = "bad";
  r.Add(std::move(nack));
  r.Add(PendingExtend{{}, ExtendGroup{{{"4", 2}}, 99}, nullptr});
  r.Add(PendingRedrive{RedriveGroup{{"5"}, false}, nullptr});
  r.Add(PendingDeadList{"7", 10, nullptr});
  EXPECT_TRUE(r.others_waiting());

  ManagerRound round;
  r.TakeOthers(round);
  EXPECT_TRUE(r.acks_waiting());
  EXPECT_FALSE(r.others_waiting());
  ASSERT_EQ(round.nacks.size(), 1u);
  ASSERT_EQ(round.writes.nack_groups.size(), 1u);
  EXPECT_EQ(round.writes.nack_groups[0].reason, "bad");
  EXPECT_EQ(round.writes.nack_groups[0].nacks[0].id, "3");
  ASSERT_EQ(round.writes.extend_groups.size(), 1u);
  EXPECT_EQ(round.writes.extend_groups[0].time_next, 99);
  ASSERT_EQ(round.writes.redrive_groups.size(), 1u);
  EXPECT_EQ(round.writes.redrive_groups[0].ids, Ids{"5"});
  ASSERT_EQ(round.dead_lists.size(), 1u);
  EXPECT_EQ(round.dead_lists[0].after_id, "7");
  EXPECT_TRUE(round.writes.ack_groups.empty());

  r.TakeAcks(round);
  EXPECT_TRUE(r.empty());
  ASSERT_EQ(round.acks.size(), 1u);
  EXPECT_EQ(round.writes.ack_groups, std::vector<Ids>{(Ids{"1", "2"})});
}

TEST(PendingRequestsTest, StoppingAnswersEveryRequestButOwnDeaths) {
  PendingRequests r(100, 100);
  std::vector<std::string> answers;
  ASSERT_EQ(r.Admit(2, "t"), absl::OkStatus());
  r.Add(Ack({"1"}, &answers));
  r.Add(PendingNack{});  // msgq's own deaths: nobody to answer
  r.Add(PendingNack{{}, {}, [&answers](absl::StatusOr<NackCount> n) {
                      answers.push_back("nack " + n.status().ToString());
                    }});
  r.Add(PendingExtend{{}, {}, [&answers](absl::StatusOr<int64_t> n) {
                        answers.push_back("extend " + n.status().ToString());
                      }});
  r.Add(PendingRedrive{{}, [&answers](absl::StatusOr<int64_t> n) {
                         answers.push_back("redrive " + n.status().ToString());
                       }});
  r.Add(PendingDeadList{"", 1,
                        [&answers](absl::StatusOr<std::vector<DeadRow>> rows) {
                          answers.push_back("dead " + rows.status().ToString());
                        }});
  ManagerRound left = r.TakeAll();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.admitted_ids(), 0u);
  EXPECT_EQ(left.nacks.size(), 2u);
  PendingRequests::Answer(left, absl::UnavailableError("stopping"));
  EXPECT_EQ(answers, (std::vector<std::string>{
                         "ack UNAVAILABLE: stopping",
                         "nack UNAVAILABLE: stopping",
                         "extend UNAVAILABLE: stopping",
                         "redrive UNAVAILABLE: stopping",
                         "dead UNAVAILABLE: stopping",
                     }));
}

}  // namespace
}  // namespace msgq
