#include "engine/groups/group_start.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(GroupStartTest, LatestIsTheDefault) {
  for (const char* from : {"", "latest"}) {
    absl::StatusOr<GroupStart> s = ParseGroupStart(from);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->kind, GroupStart::Kind::kLatest);
    EXPECT_EQ(s->gtid, "");
  }
}

TEST(GroupStartTest, Earliest) {
  absl::StatusOr<GroupStart> s = ParseGroupStart("earliest");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kind, GroupStart::Kind::kEarliest);
}

TEST(GroupStartTest, GtidListIsCanonical) {
  absl::StatusOr<GroupStart> s = ParseGroupStart("gtid: 2-7-9 ,0-1-4711");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kind, GroupStart::Kind::kGtid);
  EXPECT_EQ(s->gtid, "0-1-4711,2-7-9");
  EXPECT_EQ(
      ParseGroupStart("gtid:4294967295-4294967295-18446744073709551615")->gtid,
      "4294967295-4294967295-18446744073709551615");
}

TEST(GroupStartTest, MalformedGtidsAreRefused) {
  EXPECT_EQ(ParseGroupStart("gtid:0-1").status().message(),
            "--from: GTID \"0-1\" is not DOMAIN-SERVER-SEQUENCE (unsigned "
            "numbers: domain and server up to 4294967295, sequence up to "
            "18446744073709551615)");
  for (const char* bad :
       {"gtid:0-1-x", "gtid:-1-1-1", "gtid:0-1-+5", "gtid:0-1-1,",
        "gtid:4294967296-1-1", "gtid:0-1-18446744073709551616", "gtid:0--1",
        "gtid:0-1-1-1"}) {
    EXPECT_EQ(ParseGroupStart(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ParseGroupStart("gtid:0-1-5,0-2-6").status().message(),
            "--from: GTID list \"0-1-5,0-2-6\" names domain 0 twice; one "
            "GTID per domain");
  EXPECT_EQ(ParseGroupStart("gtid:").status().message(),
            "--from=gtid: names no GTID; use earliest to start before every "
            "transaction");
  EXPECT_EQ(
      ParseGroupStart("gtid:" + std::string(1025, '1')).status().message(),
      "--from=gtid: list is 1025 characters; at most 1024");
}

TEST(GroupStartTest, TimeIsNotBuiltYet) {
  absl::StatusOr<GroupStart> s = ParseGroupStart("time:2026-12-07T12:00:00Z");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.status().message(),
            "--from=time: is not built yet; start from earliest, latest or "
            "gtid:D-S-N");
}

TEST(GroupStartTest, OtherFormsAreRefusedListingTheForms) {
  absl::StatusOr<GroupStart> s = ParseGroupStart("yesterday");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "--from=\"yesterday\": use earliest, latest, "
            "gtid:D-S-N[,D-S-N...] or time:TIMESTAMP");
  EXPECT_EQ(ParseGroupStart("Latest").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GtidListTest, ParseAndFormat) {
  absl::StatusOr<GtidList> l = ParseGtidList("1-2-3,0-1-100");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->size(), 2u);
  EXPECT_EQ(l->at(1), (GtidEntry{2, 3}));
  EXPECT_EQ(FormatGtidList(*l), "0-1-100,1-2-3");
  EXPECT_TRUE(ParseGtidList("")->empty());
  EXPECT_TRUE(ParseGtidList("  ")->empty());
}

TEST(GtidListTest, ReachedWhenEveryDomainIsAtOrPastTheFloor) {
  const GtidList server = *ParseGtidList("0-1-100,1-2-7");
  EXPECT_TRUE(CheckGtidReached(*ParseGtidList("0-1-100"), server).ok());
  EXPECT_TRUE(CheckGtidReached(*ParseGtidList("0-9-5,1-2-7"), server).ok());
  EXPECT_TRUE(CheckGtidReached(GtidList(), server).ok());
  absl::Status ahead = CheckGtidReached(*ParseGtidList("0-1-101"), server);
  EXPECT_EQ(ahead.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ahead.message(),
            "gtid:0-1-101 is past the server's binlog position "
            "\"0-1-100,1-2-7\" (domain 0 is at 100)");
  EXPECT_EQ(CheckGtidReached(*ParseGtidList("5-1-1"), server).message(),
            "gtid:5-1-1 is past the server's binlog position "
            "\"0-1-100,1-2-7\" (domain 5 has no transaction there)");
}

TEST(ReplayWindowTest, EachDomainEndsAtItsOwnPosition) {
  ReplayWindow replay(*ParseGtidList("0-1-100,1-2-7"));
  EXPECT_TRUE(replay.Covers(0, 99));
  EXPECT_TRUE(replay.Covers(1, 7));
  // Domain 0 passes its position; domain 1 is still being read again.
  EXPECT_FALSE(replay.Covers(0, 101));
  EXPECT_FALSE(replay.done());
  EXPECT_TRUE(replay.Covers(1, 6));
  // A domain that began after the start is new throughout.
  EXPECT_FALSE(replay.Covers(5, 1));
  EXPECT_FALSE(replay.Covers(1, 8));
  EXPECT_TRUE(replay.done());
  EXPECT_FALSE(replay.Covers(0, 50));
}

TEST(ReplayWindowTest, NothingToReadAgainIsDoneAtOnce) {
  ReplayWindow replay{GtidList()};
  EXPECT_TRUE(replay.done());
  EXPECT_FALSE(replay.Covers(0, 1));
}

}  // namespace
}  // namespace msgq
