#include "server/keda_scaler.h"

#include <limits>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(KedaTriggerTest, DefaultsWithOnlyTheTable) {
  absl::StatusOr<KedaTrigger> t =
      ParseKedaTrigger({{"table", "jobs"}, {"scalerAddress", "msgqd:9090"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->keyspace, "");
  EXPECT_EQ(t->table, "jobs");
  EXPECT_EQ(t->target_messages_per_replica, 10);
  EXPECT_EQ(t->activation_messages, 0);
  EXPECT_EQ(t->age_seconds, 0);
}

TEST(KedaTriggerTest, EveryKey) {
  absl::StatusOr<KedaTrigger> t =
      ParseKedaTrigger({{"table", "jobs"},
                        {"keyspace", "shop"},
                        {"targetMessagesPerReplica", "50"},
                        {"activationMessages", "3"},
                        {"ageSeconds", "120"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->keyspace, "shop");
  EXPECT_EQ(t->target_messages_per_replica, 50);
  EXPECT_EQ(t->activation_messages, 3);
  EXPECT_EQ(t->age_seconds, 120);
}

TEST(KedaTriggerTest, RefusesWhatIsMissingOrMalformed) {
  absl::StatusOr<KedaTrigger> t = ParseKedaTrigger({{"keyspace", "shop"}});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "scalerMetadata must name the message table: `table`");
  t = ParseKedaTrigger({{"table", ""}});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  t = ParseKedaTrigger({{"table", "jobs"}, {"targetMessagesPerReplica", "0"}});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "scalerMetadata `targetMessagesPerReplica` must be an integer "
            "from 1 to 9223372036854775807, got \"0\"");
  t = ParseKedaTrigger({{"table", "jobs"}, {"activationMessages", "-1"}});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  t = ParseKedaTrigger({{"table", "jobs"}, {"ageSeconds", "1.5"}});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "scalerMetadata `ageSeconds` must be an integer from 0 to "
            "9223372036, got \"1.5\"");
}

MessageCounts::Counts At(int64_t ready, int64_t in_flight,
                         std::optional<int64_t> oldest_due_ns, int64_t now_ns) {
  MessageCounts::Counts c;
  c.ready = ready;
  c.in_flight = in_flight;
  c.scheduled = 1000;  // never counted
  c.dead = 1000;       // never counted
  c.oldest_due_ns = oldest_due_ns;
  c.now_ns = now_ns;
  return c;
}

TEST(KedaMetricTest, ReadyPlusInFlight) {
  KedaTrigger t;
  t.table = "jobs";
  EXPECT_EQ(KedaMetricValue(t, At(0, 0, std::nullopt, 0)), 0);
  EXPECT_FALSE(KedaActive(t, At(0, 0, std::nullopt, 0)));
  EXPECT_EQ(KedaMetricValue(t, At(7, 5, 100 * kSecond, 100 * kSecond)), 12);
  EXPECT_TRUE(KedaActive(t, At(1, 0, std::nullopt, 0)));
  EXPECT_TRUE(KedaActive(t, At(0, 1, std::nullopt, 0)));
}

TEST(KedaMetricTest, ActivationIsStrictlyAbove) {
  KedaTrigger t;
  t.activation_messages = 5;
  EXPECT_FALSE(KedaActive(t, At(5, 0, std::nullopt, 0)));
  EXPECT_TRUE(KedaActive(t, At(5, 1, std::nullopt, 0)));
}

TEST(KedaMetricTest, AgeTermAddsAReplicaPerWholeStep) {
  KedaTrigger t;
  t.target_messages_per_replica = 10;
  t.age_seconds = 60;
  const int64_t due = 1000 * kSecond;
  // 59.999 s: no whole step yet.
  EXPECT_EQ(KedaMetricValue(t, At(3, 0, due, due + 60 * kSecond - 1)), 3);
  EXPECT_EQ(KedaMetricValue(t, At(3, 0, due, due + 60 * kSecond)), 13);
  EXPECT_EQ(KedaMetricValue(t, At(3, 2, due, due + 185 * kSecond)), 35);
  // A clock behind the due time adds nothing.
  EXPECT_EQ(KedaMetricValue(t, At(3, 0, due, due - kSecond)), 3);
  // No age term without ageSeconds.
  t.age_seconds = 0;
  EXPECT_EQ(KedaMetricValue(t, At(3, 0, due, due + 600 * kSecond)), 3);
}

TEST(KedaMetricTest, Saturates) {
  KedaTrigger t;
  t.target_messages_per_replica = std::numeric_limits<int64_t>::max();
  t.age_seconds = 1;
  EXPECT_EQ(KedaMetricValue(t, At(1, 0, 0 + 1, 10 * kSecond)),
            std::numeric_limits<int64_t>::max());
}

TEST(KedaMetricTest, NameNamesTheTable) {
  EXPECT_EQ(KedaMetricName("shop", "jobs"), "msgq-shop-jobs");
}

}  // namespace
}  // namespace msgq
