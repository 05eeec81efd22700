// msgq's own directives, which Vitess does not know: the failure directives
// msgq_max_attempts, msgq_max_age and msgq_dead_retention (all optional;
// docs/tables.md#when-work-fails), the partition directives, the rate limit
// and its burst, an unknown msgq_ key, and each one's exact INVALID_ARGUMENT
// message for a bad, out-of-range or repeated value. The vt_* directives are
// in directives_test.cc and directives_values_test.cc.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/directives.h"
#include "engine/directives_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::directives_test {
namespace {

// The exact message of a comment's error.
std::string ErrorOf(const std::string& comment) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(comment);
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument)
      << comment;
  return std::string(settings.status().message());
}

TEST(ParseDirectivesTest, FailureDirectivesAreOptional) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(kRequired);
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->max_attempts, 0);
  EXPECT_EQ(settings->max_age, absl::ZeroDuration());
  EXPECT_EQ(settings->dead_retention, absl::ZeroDuration());
  EXPECT_EQ(settings->dedup_window, absl::ZeroDuration());
}

TEST(ParseDirectivesTest, ParsesDedupWindow) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("msgq_dedup_window = 600.5"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->dedup_window,
            absl::Seconds(600) + absl::Milliseconds(500));
}

TEST(ParseDirectivesTest, ParsesFailureDirectives) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      WithRequired(" msgq_max_attempts = 5 "
                   ",msgq_max_age=3600.5,msgq_dead_retention=604800"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->max_attempts, 5);
  EXPECT_EQ(settings->max_age, absl::Seconds(3600) + absl::Milliseconds(500));
  EXPECT_EQ(settings->dead_retention, absl::Seconds(604800));
  const absl::StatusOr<TableSettings> most =
      ParseDirectives(WithRequired("msgq_max_attempts=1000000,msgq_max_age="
                                   "3153600000,msgq_dead_retention=0.001"));
  ASSERT_TRUE(most.ok()) << most.status();
  EXPECT_EQ(most->max_attempts, kMaxAttemptsLimit);
  EXPECT_EQ(most->max_age, absl::Seconds(kMaxDurationSeconds));
  EXPECT_EQ(most->dead_retention, absl::Milliseconds(1));
}

TEST(ParseDirectivesTest, PartitionDirectives) {
  absl::StatusOr<TableSettings> s = ParseDirectives(kRequired);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->partition_interval, absl::Hours(24));
  EXPECT_EQ(s->partitions_ahead, 2);
  s = ParseDirectives(
      WithRequired("msgq_partition_interval=3600,msgq_partitions_ahead=7"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->partition_interval, absl::Hours(1));
  EXPECT_EQ(s->partitions_ahead, 7);
  ExpectInvalid(WithRequired("msgq_partition_interval=1.5"),
                {"msgq_partition_interval", "whole number of seconds"});
  ExpectInvalid(WithRequired("msgq_partition_interval=0.5"),
                {"msgq_partition_interval", "whole number of seconds"});
  ExpectInvalid(WithRequired("msgq_partition_interval=0"),
                {"msgq_partition_interval", "positive"});
  ExpectInvalid(WithRequired("msgq_partitions_ahead=0"),
                {"msgq_partitions_ahead", "positive integer"});
  ExpectInvalid(WithRequired("msgq_partitions_ahead=1001"),
                {"msgq_partitions_ahead", "more than 1000"});
}

TEST(ParseDirectivesTest, ParsesRateLimit) {
  absl::StatusOr<TableSettings> s = ParseDirectives(kRequired);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rate_limit, 0);  // unlimited
  s = ParseDirectives(WithRequired("msgq_rate_burst=10,msgq_rate_limit=50"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rate_limit, 50);
  EXPECT_EQ(s->rate_burst, 10);
  s = ParseDirectives(WithRequired("msgq_rate_limit=0.5"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rate_limit, 0.5);
  EXPECT_EQ(s->rate_burst, 1);  // default: one second's worth, at least 1
  s = ParseDirectives(WithRequired("msgq_rate_limit=100.5"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rate_burst, 101);
}

TEST(ParseDirectivesTest, BadRateLimitsAreRefused) {
  EXPECT_EQ(ErrorOf(WithRequired("msgq_rate_limit=0")),
            "msgq_rate_limit: \"0\" must be positive");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_rate_limit=abc")),
            "msgq_rate_limit: \"abc\" is not a number");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_rate_limit=2e9")),
            "msgq_rate_limit: \"2e9\" is more than 1e+09");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_rate_limit=2000000000")),
            "msgq_rate_limit: \"2000000000\" is more than 1e+09");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_rate_burst=5")),
            "msgq_rate_burst needs msgq_rate_limit (the rate the burst "
            "refills at)");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_rate_limit=5,msgq_rate_burst=0.5")),
            "msgq_rate_burst: \"0.5\" must be at least 1 message");
  ExpectInvalid(WithRequired("msgq_rate_limit="), {"msgq_rate_limit"});
}

TEST(ParseDirectivesTest, UnknownMsgqDirective) {
  EXPECT_EQ(ErrorOf(WithRequired("msgq_max_attempt=3")),
            "unknown directive msgq_max_attempt");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_=1")), "unknown directive msgq_");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_retries")),
            "unknown directive msgq_retries");
  // Not msgq_: an application's note.
  EXPECT_TRUE(ParseDirectives(WithRequired("msgqx=1,my_msgq_note")).ok());
}

TEST(ParseDirectivesTest, MaxAttemptsMustBeAPositiveIntegerWithinTheLimit) {
  for (const char* bad : {"0", "-1", "2.5", "1e3", "abc", "0x10",
                          "99999999999999999999", "1 0"}) {
    EXPECT_EQ(ErrorOf(WithRequired(absl::StrCat("msgq_max_attempts=", bad))),
              absl::StrCat("msgq_max_attempts: \"", bad,
                           "\" must be a positive integer no larger than "
                           "1000000"));
  }
  EXPECT_EQ(ErrorOf(WithRequired("msgq_max_attempts=1000001")),
            "msgq_max_attempts: \"1000001\" is more than 1000000");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_max_attempts=2147483648")),
            "msgq_max_attempts: \"2147483648\" is more than 1000000");
  ExpectInvalid(WithRequired("msgq_max_attempts="), {"msgq_max_attempts"});
  ExpectInvalid(WithRequired("msgq_max_attempts"), {"msgq_max_attempts"});
}

TEST(ParseDirectivesTest, FailureDurationsMustBePositiveSecondsWithinTheLimit) {
  for (const char* d :
       {"msgq_max_age", "msgq_dead_retention", "msgq_dedup_window"}) {
    for (const char* bad : {"0", "-1", "0.0", "1e-12"}) {
      EXPECT_EQ(ErrorOf(WithRequired(absl::StrCat(d, "=", bad))),
                absl::StrCat(d, ": \"", bad,
                             "\" must be a positive number of seconds"));
    }
    for (const char* bad : {"abc", "1d", "inf", "nan"}) {
      EXPECT_EQ(ErrorOf(WithRequired(absl::StrCat(d, "=", bad))),
                absl::StrCat(d, ": \"", bad, "\" is not a number of seconds"));
    }
    EXPECT_EQ(ErrorOf(WithRequired(absl::StrCat(d, "=3153600001"))),
              absl::StrCat(d,
                           ": \"3153600001\" is more than 3153600000 seconds "
                           "(100 years)"));
    EXPECT_EQ(ErrorOf(WithRequired(absl::StrCat(d, "=1e400"))),
              absl::StrCat(d, ": \"1e400\" is too large a number of seconds"));
    ExpectInvalid(WithRequired(absl::StrCat(d, "=")), {d});
  }
}

TEST(ParseDirectivesTest, FailureDirectivesGivenTwice) {
  EXPECT_EQ(ErrorOf(WithRequired("msgq_max_attempts=3,msgq_max_attempts=4")),
            "msgq_max_attempts: given twice (\"3\" and \"4\")");
  EXPECT_EQ(ErrorOf(WithRequired("msgq_max_age=1,msgq_max_age=1")),
            "msgq_max_age: given twice (\"1\" and \"1\")");
  EXPECT_EQ(
      ErrorOf(WithRequired("msgq_dead_retention=5, msgq_dead_retention = 6")),
      "msgq_dead_retention: given twice (\"5\" and \"6\")");
}

}  // namespace
}  // namespace msgq::directives_test
