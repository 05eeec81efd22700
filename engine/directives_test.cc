// The table-comment grammar shared by Vitess and msgq: how a message table is
// recognised (IsMessageTableComment), and how ParseDirectives reads the vt_*
// directives: the required ones and the defaults of the rest, in any order,
// with whitespace, application notes and empty pieces around them, and the
// syntax errors (a missing required directive, an unknown vt_ key, an empty
// value, a directive given twice). What each vt_* value may be is in
// directives_values_test.cc, msgq's own msgq_* directives in
// directives_msgq_test.cc.
#include "engine/directives.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/directives_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::directives_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

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

}  // namespace
}  // namespace msgq::directives_test
