// The values of the vt_* directives: durations in seconds (not a number, not
// positive, too large for int64 nanoseconds with headroom), counts with their
// documented maxima, the bounds between vt_min_backoff and vt_max_backoff,
// and vt_message_cols (names kept as given, id first, no empty or repeated
// names). Each bad value is INVALID_ARGUMENT with a message naming the
// directive and the value. The grammar around them is in directives_test.cc.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "engine/directives.h"
#include "engine/directives_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::directives_test {
namespace {

using ::testing::ElementsAre;

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

// Values that parse but that no table means, and that overflow int64
// nanoseconds or the poll's LIMIT, are load errors.
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

}  // namespace
}  // namespace msgq::directives_test
