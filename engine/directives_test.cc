#include "engine/directives.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kRequired[] =
    "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
    "vt_cache_size=10000,vt_poller_interval=30";

// The required directives plus `extra` (a comma-separated tail).
std::string WithRequired(const std::string& extra) {
  return absl::StrCat(kRequired, ",", extra);
}

// Asserts that `comment` is rejected with INVALID_ARGUMENT and that the
// message contains every string in `substrings`.
void ExpectInvalid(const std::string& comment,
                   const std::vector<std::string>& substrings) {
  SCOPED_TRACE(comment);
  const absl::StatusOr<TableSettings> settings = ParseDirectives(comment);
  ASSERT_FALSE(settings.ok());
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& s : substrings) {
    EXPECT_THAT(settings.status().message(), HasSubstr(s));
  }
}

TEST(IsMessageTableCommentTest, DetectsMarker) {
  EXPECT_TRUE(IsMessageTableComment(kRequired));
  EXPECT_TRUE(IsMessageTableComment("vitess_message"));
  EXPECT_TRUE(IsMessageTableComment("queue for orders, vitess_message "));
}

TEST(IsMessageTableCommentTest, RejectsOtherComments) {
  EXPECT_FALSE(IsMessageTableComment(""));
  EXPECT_FALSE(IsMessageTableComment("orders table"));
  EXPECT_FALSE(IsMessageTableComment("vitess_messag,vt_ack_wait=30"));
  EXPECT_FALSE(IsMessageTableComment("VITESS_MESSAGE"));
}

TEST(ParseDirectivesTest, ParsesRequiredDirectivesAndDefaults) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(kRequired);
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->ack_wait, absl::Seconds(30));
  EXPECT_EQ(settings->purge_after, absl::Seconds(86400));
  EXPECT_EQ(settings->batch_size, 10);
  EXPECT_EQ(settings->cache_size, 10000);
  EXPECT_EQ(settings->poller_interval, absl::Seconds(30));
  EXPECT_EQ(settings->min_backoff, absl::Seconds(30));
  EXPECT_EQ(settings->max_backoff, absl::InfiniteDuration());
  EXPECT_THAT(settings->message_cols, IsEmpty());
}

TEST(ParseDirectivesTest, ParsesEveryDirective) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      "vitess_message,vt_ack_wait=2,vt_purge_after=3600,vt_batch_size=5,"
      "vt_cache_size=100,vt_poller_interval=7,vt_min_backoff=4,"
      "vt_max_backoff=60,vt_message_cols=id|payload|kind");
  ASSERT_TRUE(settings.ok()) << settings.status();
  TableSettings expected;
  expected.ack_wait = absl::Seconds(2);
  expected.purge_after = absl::Seconds(3600);
  expected.batch_size = 5;
  expected.cache_size = 100;
  expected.poller_interval = absl::Seconds(7);
  expected.min_backoff = absl::Seconds(4);
  expected.max_backoff = absl::Seconds(60);
  expected.message_cols = {"id", "payload", "kind"};
  EXPECT_EQ(*settings, expected);
}

TEST(ParseDirectivesTest, OrderDoesNotMatter) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      "vt_poller_interval=30,vt_cache_size=10000,vt_batch_size=10,"
      "vt_purge_after=86400,vt_ack_wait=30,vitess_message");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(*settings, *ParseDirectives(kRequired));
}

TEST(ParseDirectivesTest, FractionalSecondsAreExact) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      "vitess_message,vt_ack_wait=0.5,vt_purge_after=1.25,vt_batch_size=1,"
      "vt_cache_size=1,vt_poller_interval=.25,vt_min_backoff=0.5,"
      "vt_max_backoff=2.");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->ack_wait, absl::Milliseconds(500));
  EXPECT_EQ(settings->purge_after, absl::Milliseconds(1250));
  EXPECT_EQ(settings->poller_interval, absl::Milliseconds(250));
  EXPECT_EQ(settings->min_backoff, absl::Milliseconds(500));
  EXPECT_EQ(settings->max_backoff, absl::Seconds(2));
}

TEST(ParseDirectivesTest, KeepsNanosecondPrecision) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("vt_min_backoff=0.000000001"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->min_backoff, absl::Nanoseconds(1));
}

TEST(ParseDirectivesTest, AcceptsSignAndExponent) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("vt_min_backoff=+1.5e1,vt_max_backoff=1E3"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->min_backoff, absl::Seconds(15));
  EXPECT_EQ(settings->max_backoff, absl::Seconds(1000));
}

TEST(ParseDirectivesTest, TrimsWhitespaceAroundKeysAndValues) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      " vitess_message , vt_ack_wait = 30 ,\tvt_purge_after=\t86400\t,"
      "vt_batch_size =10,vt_cache_size= 10000 ,\nvt_poller_interval = 30\n,"
      " vt_message_cols = id | payload ");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->ack_wait, absl::Seconds(30));
  EXPECT_EQ(settings->purge_after, absl::Seconds(86400));
  EXPECT_EQ(settings->batch_size, 10);
  EXPECT_EQ(settings->cache_size, 10000);
  EXPECT_EQ(settings->poller_interval, absl::Seconds(30));
  EXPECT_THAT(settings->message_cols, ElementsAre("id", "payload"));
}

TEST(ParseDirectivesTest, IgnoresApplicationNotesAndEmptyPieces) {
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      "orders queue,,vitess_message, ,owner=team-a,"
      "vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30,note=vt_bogus=1,"
      "VT_ack_wait=abc,x_vt_foo=1,");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(*settings, *ParseDirectives(kRequired));
}

TEST(ParseDirectivesTest, DoesNotRequireTheMarker) {
  // Detection is IsMessageTableComment's job; the parser only reads vt_*.
  const absl::StatusOr<TableSettings> settings = ParseDirectives(
      "vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->ack_wait, absl::Seconds(30));
}

TEST(ParseDirectivesTest, MissingRequiredDirective) {
  const std::vector<std::string> names = {"vt_ack_wait", "vt_purge_after",
                                          "vt_batch_size", "vt_cache_size",
                                          "vt_poller_interval"};
  for (const std::string& missing : names) {
    std::string comment = "vitess_message";
    for (const std::string& name : names) {
      if (name != missing) absl::StrAppend(&comment, ",", name, "=1");
    }
    ExpectInvalid(comment, {"missing required directive " + missing});
  }
  ExpectInvalid("vitess_message", {"missing required directive vt_ack_wait"});
}

TEST(ParseDirectivesTest, UnknownDirective) {
  ExpectInvalid(WithRequired("vt_ack_wiat=30"),
                {"unknown directive vt_ack_wiat"});
  ExpectInvalid(WithRequired("vt_=1"), {"unknown directive vt_"});
  ExpectInvalid(WithRequired("vt_bogus"), {"unknown directive vt_bogus"});
}

TEST(ParseDirectivesTest, MissingOrEmptyValue) {
  ExpectInvalid(WithRequired("vt_min_backoff"), {"vt_min_backoff"});
  ExpectInvalid(WithRequired("vt_min_backoff="), {"vt_min_backoff"});
  ExpectInvalid(WithRequired("vt_min_backoff=  "), {"vt_min_backoff"});
  ExpectInvalid(WithRequired("vt_message_cols="), {"vt_message_cols"});
}

TEST(ParseDirectivesTest, DuplicateDirective) {
  ExpectInvalid(WithRequired("vt_ack_wait=30"), {"vt_ack_wait", "twice"});
  ExpectInvalid(WithRequired("vt_max_backoff=60, vt_max_backoff = 90"),
                {"vt_max_backoff", "twice", "60", "90"});
}

TEST(ParseDirectivesTest, DurationNotANumber) {
  for (const char* bad :
       {"abc", "30s", "3 0", "inf", "-inf", "nan", "0x10", "0x1p3", "1e",
        "1.2.3", ".", "+", "--1", "+-1", "1e+", "١"}) {
    ExpectInvalid(WithRequired(absl::StrCat("vt_min_backoff=", bad)),
                  {"vt_min_backoff", absl::StrCat("\"", bad, "\""),
                   "is not a number of seconds"});
  }
  ExpectInvalid(
      "vitess_message,vt_ack_wait=abc,vt_purge_after=86400,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30",
      {"vt_ack_wait: \"abc\" is not a number of seconds"});
}

TEST(ParseDirectivesTest, DurationNotPositive) {
  for (const char* bad : {"0", "0.0", "-0", "-1", "-0.5", "1e-12", "-1e400"}) {
    ExpectInvalid(WithRequired(absl::StrCat("vt_max_backoff=", bad)),
                  {"vt_max_backoff", absl::StrCat("\"", bad, "\""),
                   "must be a positive number of seconds"});
  }
  ExpectInvalid(
      "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=0",
      {"vt_poller_interval: \"0\" must be a positive"});
  ExpectInvalid(
      "vitess_message,vt_ack_wait=30,vt_purge_after=-5,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30",
      {"vt_purge_after: \"-5\" must be a positive"});
}

TEST(ParseDirectivesTest, DurationTooLarge) {
  ExpectInvalid(WithRequired("vt_max_backoff=1e400"),
                {"vt_max_backoff", "\"1e400\"", "too large"});
  ExpectInvalid(WithRequired("vt_max_backoff=1e30"),
                {"vt_max_backoff", "\"1e30\"", "too large"});
}

// Defect 12: values that parse but that no table means, and that overflow
// int64 nanoseconds or the poll's LIMIT, are load errors.
TEST(ParseDirectivesTest, DurationsMustFitInt64NanosecondsWithHeadroom) {
  // 1e10 s is past int64 nanoseconds (about 9.2e9 s) yet a finite Duration.
  for (const char* d :
       {"vt_ack_wait", "vt_purge_after", "vt_poller_interval"}) {
    ExpectInvalid(
        absl::StrReplaceAll(
            kRequired, {{absl::StrCat(d, "="), absl::StrCat(d, "=1e10,x=")}}),
        {d, "\"1e10\" is more than 3153600000 seconds (100 years)"});
  }
  for (const char* d : {"vt_min_backoff", "vt_max_backoff"}) {
    ExpectInvalid(WithRequired(absl::StrCat(d, "=1e10")),
                  {d, "\"1e10\" is more than 3153600000 seconds (100 years)"});
  }
  ExpectInvalid(WithRequired("vt_max_backoff=3153600000.5"),
                {"vt_max_backoff: \"3153600000.5\" is more than"});
  const absl::StatusOr<TableSettings> ok =
      ParseDirectives(WithRequired("vt_max_backoff=3153600000"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->max_backoff, absl::Seconds(3153600000));
}

TEST(ParseDirectivesTest, CountsHaveDocumentedMaxima) {
  ExpectInvalid(absl::StrReplaceAll(kRequired, {{"vt_cache_size=10000",
                                                 "vt_cache_size=1000001"}}),
                {"vt_cache_size: \"1000001\" is more than 1000000"});
  ExpectInvalid(absl::StrReplaceAll(kRequired, {{"vt_cache_size=10000",
                                                 "vt_cache_size=2147483647"}}),
                {"vt_cache_size: \"2147483647\" is more than 1000000"});
  ExpectInvalid(absl::StrReplaceAll(
                    kRequired, {{"vt_batch_size=10", "vt_batch_size=10001"}}),
                {"vt_batch_size: \"10001\" is more than 10000"});
  ExpectInvalid(absl::StrReplaceAll(kRequired, {{"vt_batch_size=10",
                                                 "vt_batch_size=99999999999"}}),
                {"vt_batch_size: \"99999999999\" is more than 10000"});
  const absl::StatusOr<TableSettings> ok = ParseDirectives(absl::StrReplaceAll(
      kRequired, {{"vt_cache_size=10000", "vt_cache_size=1000000"},
                  {"vt_batch_size=10", "vt_batch_size=10000"}}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->cache_size, kMaxCacheSize);
  EXPECT_EQ(ok->batch_size, kMaxBatchSize);
}

TEST(ParseDirectivesTest, CountNotAPositiveInteger) {
  for (const char* bad : {"0", "-1", "10.5", "1e3", "abc", "0x10",
                          "99999999999999999999", "1 0"}) {
    ExpectInvalid(
        absl::StrCat("vitess_message,vt_ack_wait=30,vt_purge_after=86400,"
                     "vt_batch_size=",
                     bad, ",vt_cache_size=10000,vt_poller_interval=30"),
        {absl::StrCat("vt_batch_size: \"", bad,
                      "\" must be a positive integer")});
    ExpectInvalid(
        absl::StrCat("vitess_message,vt_ack_wait=30,vt_purge_after=86400,"
                     "vt_batch_size=10,vt_cache_size=",
                     bad, ",vt_poller_interval=30"),
        {absl::StrCat("vt_cache_size: \"", bad,
                      "\" must be a positive integer")});
  }
}

TEST(ParseDirectivesTest, MinBackoffAboveMaxBackoff) {
  ExpectInvalid(WithRequired("vt_min_backoff=10,vt_max_backoff=5"),
                {"vt_max_backoff (5 s) is less than vt_min_backoff (10 s)"});
}

TEST(ParseDirectivesTest, MaxBackoffBelowDefaultedMinBackoff) {
  // min_backoff defaults to vt_ack_wait (30 s).
  ExpectInvalid(WithRequired("vt_max_backoff=5"),
                {"vt_max_backoff (5 s) is less than vt_min_backoff (30 s",
                 "vt_ack_wait"});
}

TEST(ParseDirectivesTest, BackoffBoundsMayBeEqual) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("vt_max_backoff=30"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->min_backoff, absl::Seconds(30));
  EXPECT_EQ(settings->max_backoff, absl::Seconds(30));
}

TEST(ParseDirectivesTest, MinBackoffMayBeBelowAckWait) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("vt_min_backoff=1,vt_max_backoff=2"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->ack_wait, absl::Seconds(30));
  EXPECT_EQ(settings->min_backoff, absl::Seconds(1));
  EXPECT_EQ(settings->max_backoff, absl::Seconds(2));
}

TEST(ParseDirectivesTest, MessageColsKeepNamesAsGiven) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("vt_message_cols=ID|Payload"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_THAT(settings->message_cols, ElementsAre("ID", "Payload"));
}

TEST(ParseDirectivesTest, MessageColsOnlyId) {
  const absl::StatusOr<TableSettings> settings =
      ParseDirectives(WithRequired("vt_message_cols=id"));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_THAT(settings->message_cols, ElementsAre("id"));
}

TEST(ParseDirectivesTest, MessageColsInvalid) {
  ExpectInvalid(WithRequired("vt_message_cols=payload|id"),
                {"vt_message_cols", "\"payload|id\"", "must start with id"});
  ExpectInvalid(WithRequired("vt_message_cols=identity|payload"),
                {"vt_message_cols", "must start with id"});
  ExpectInvalid(WithRequired("vt_message_cols=id||payload"),
                {"vt_message_cols", "empty column name"});
  ExpectInvalid(WithRequired("vt_message_cols=id|payload|"),
                {"vt_message_cols", "empty column name"});
  ExpectInvalid(WithRequired("vt_message_cols=|id"),
                {"vt_message_cols", "empty column name"});
  ExpectInvalid(WithRequired("vt_message_cols=id| |payload"),
                {"vt_message_cols", "empty column name"});
  ExpectInvalid(WithRequired("vt_message_cols=id|payload|payload"),
                {"vt_message_cols", "payload twice"});
  ExpectInvalid(WithRequired("vt_message_cols=id|Payload|payload"),
                {"vt_message_cols", "twice"});
  ExpectInvalid(WithRequired("vt_message_cols=id|ID"),
                {"vt_message_cols", "twice"});
}

// ---- msgq's own directives (issue 12) ------------------------------------

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
  for (const char* d : {"msgq_max_age", "msgq_dead_retention"}) {
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
}  // namespace msgq
