#include "engine/binlog/binlog_decoder.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "engine/binlog/binlog_event_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using binlog_test::Column;
using binlog_test::Event;
using binlog_test::FormatDescription;
using binlog_test::Gtid;
using binlog_test::Image;
using binlog_test::Le;
using binlog_test::Query;
using binlog_test::Rows;
using binlog_test::TableMap;
using binlog_test::VarStr;
using binlog_test::XaGtid;
using binlog_test::XaPrepare;
using binlog_test::Xid;
using ::testing::ElementsAre;
using ::testing::Optional;

constexpr uint8_t kTinyT = 1, kBigT = 8, kBlobT = 252, kVarcharT = 15;

// The schema's demo table: id bigint, priority tinyint, epoch bigint,
// time_next bigint, time_acked bigint, message json (a LONGBLOB).
const std::vector<Column> kDemo = {{kBigT, ""}, {kTinyT, ""},
                                   {kBigT, ""}, {kBigT, ""},
                                   {kBigT, ""}, {kBlobT, Le(4, 1)}};
const BookkeepingColumns kDemoColumns{6, 0, 1, 3, 4};

std::string DemoRow(int64_t id, int8_t priority, std::optional<int64_t> next,
                    std::optional<int64_t> acked,
                    std::optional<std::string> message = "{}") {
  std::optional<std::string> m;
  if (message) m = Le(message->size(), 4) + *message;
  return Image({Le(id, 8), Le(static_cast<uint8_t>(priority), 1), Le(0, 8),
                next ? std::optional(Le(*next, 8)) : std::nullopt,
                acked ? std::optional(Le(*acked, 8)) : std::nullopt, m});
}

class BinlogDecoderTest : public ::testing::Test {
 protected:
  BinlogDecoderTest()
      : decoder_([this](const std::string& db, const std::string& table) {
          ++lookups_;
          auto it = known_.find(db + "." + table);
          if (it == known_.end()) return std::optional<BookkeepingColumns>();
          return std::optional(it->second);
        }) {}

  DecodedEvent Ok(const std::string& event) {
    absl::StatusOr<DecodedEvent> d = decoder_.Decode(event);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *std::move(d) : DecodedEvent{};
  }

  std::map<std::string, BookkeepingColumns> known_ = {{"app.q", kDemoColumns}};
  int lookups_ = 0;
  BinlogDecoder decoder_;
};

TEST_F(BinlogDecoderTest, InsertReportsBookkeepingColumnsOfEachRow) {
  Ok(TableMap(7, "app", "q", kDemo));
  EXPECT_EQ(lookups_, 1);
  DecodedEvent d = Ok(Rows(
      kWriteRowsV1, 7, 6,
      {DemoRow(1, 50, 0, std::nullopt), DemoRow(-2, -3, 5, 9, std::nullopt)}));
  EXPECT_EQ(d.db, "app");
  EXPECT_EQ(d.table, "q");
  ASSERT_EQ(d.changes.size(), 2u);
  EXPECT_EQ(d.changes[0].id, "1");
  EXPECT_FALSE(d.changes[0].deleted);
  EXPECT_EQ(d.changes[0].priority, 50);
  EXPECT_THAT(d.changes[0].time_next, Optional(0));
  EXPECT_EQ(d.changes[0].time_acked, std::nullopt);
  EXPECT_EQ(d.changes[1].id, "-2");
  EXPECT_EQ(d.changes[1].priority, -3);
  EXPECT_THAT(d.changes[1].time_next, Optional(5));
  EXPECT_THAT(d.changes[1].time_acked, Optional(9));
}

TEST_F(BinlogDecoderTest, UpdateReportsAfterImagesAndDeleteTheRowsGone) {
  Ok(TableMap(7, "app", "q", kDemo));
  DecodedEvent u = Ok(Rows(
      kUpdateRowsV2, 7, 6,
      {DemoRow(1, 50, 0, std::nullopt), DemoRow(1, 50, std::nullopt, 123),
       DemoRow(2, 10, 0, std::nullopt), DemoRow(2, 10, 77, std::nullopt)}));
  ASSERT_EQ(u.changes.size(), 2u);
  EXPECT_EQ(u.changes[0].id, "1");
  EXPECT_EQ(u.changes[0].time_next, std::nullopt);
  EXPECT_THAT(u.changes[0].time_acked, Optional(123));
  EXPECT_TRUE(u.changes[0].newly_acked);
  EXPECT_EQ(u.changes[1].id, "2");
  EXPECT_THAT(u.changes[1].time_next, Optional(77));
  EXPECT_FALSE(u.changes[1].newly_acked);
  DecodedEvent d =
      Ok(Rows(kDeleteRowsV1, 7, 6, {DemoRow(3, 50, 0, std::nullopt)}));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].id, "3");
  EXPECT_TRUE(d.changes[0].deleted);
  EXPECT_FALSE(d.changes[0].newly_acked);
}

TEST_F(BinlogDecoderTest, OnlyAnUpdateFromUnackedToAckedIsNewlyAcked) {
  Ok(TableMap(7, "app", "q", kDemo));
  DecodedEvent u = Ok(Rows(
      kUpdateRowsV1, 7, 6,
      {DemoRow(1, 50, std::nullopt, 100), DemoRow(1, 50, std::nullopt, 200),
       DemoRow(2, 50, 5, std::nullopt), DemoRow(2, 50, std::nullopt, 300)}));
  ASSERT_EQ(u.changes.size(), 2u);
  EXPECT_THAT(u.changes[0].time_acked, Optional(200));
  EXPECT_FALSE(u.changes[0].newly_acked);  // was acked already
  EXPECT_THAT(u.changes[1].time_acked, Optional(300));
  EXPECT_TRUE(u.changes[1].newly_acked);
  // An insert of an acked row is not an ack.
  DecodedEvent w =
      Ok(Rows(kWriteRowsV2, 7, 6, {DemoRow(3, 50, std::nullopt, 400)}));
  ASSERT_EQ(w.changes.size(), 1u);
  EXPECT_FALSE(w.changes[0].newly_acked);
}

TEST_F(BinlogDecoderTest, TextIdsAndEveryOtherColumnTypeAreMeasured) {
  // id varchar(64), then columns of every kind before the bookkeeping ones.
  const std::vector<Column> cols = {
      {kVarcharT, Le(256, 2)},    // id varchar(64) utf8mb4: 2-byte prefix
      {246, "\x14\x06"},          // decimal(20,6)
      {18, Le(6, 1)},             // datetime(6)
      {17, Le(3, 1)},             // timestamp(3)
      {10, ""},                   // date
      {19, Le(2, 1)},             // time(2)
      {13, ""},                   // year
      {4, Le(4, 1)},              // float
      {5, Le(8, 1)},              // double
      {254, "\xf7\x01"},          // enum (1 byte)
      {254, "\xf8\x01"},          // set (1 byte)
      {16, Le(2, 1) + Le(1, 1)},  // bit(10): 2 bits + 1 byte
      {254, "\xfe\x28"},          // char(10) utf8mb4 (40 bytes max)
      {254, "\xee\xfc"},          // char(255) utf8mb4: 1020 bytes, 2-byte len
      {kBlobT, Le(2, 1)},         // text
      {9, ""},                    // mediumint (priority)
      {kBigT, ""},                // time_next
      {kBigT, ""},                // time_acked
  };
  known_["app.t"] = BookkeepingColumns{18, 0, 15, 16, 17};
  Ok(TableMap(9, "app", "t", cols));
  auto row = [](const std::string& id) {
    return Image({Le(id.size(), 2) + id, std::string(10, 'd'),
                  std::string(8, 'D'), std::string(6, 'T'), "abc", "tim4", "y",
                  "flt4", "double88", "\x02", "\x03", "bb", VarStr("abc"),
                  Le(3, 2) + "xyz", Le(5, 2) + "hello",
                  Le(0xfffffe, 3) /* -2 */, Le(42, 8), std::nullopt});
  };
  DecodedEvent d = Ok(Rows(kWriteRowsV1, 9, 18, {row("07"), row("+7")}));
  ASSERT_EQ(d.changes.size(), 2u);
  EXPECT_EQ(d.changes[0].id, "07");
  EXPECT_EQ(d.changes[1].id, "+7");
  EXPECT_EQ(d.changes[1].priority, -2);
  EXPECT_THAT(d.changes[1].time_next, Optional(42));
  EXPECT_EQ(d.changes[1].time_acked, std::nullopt);
}

TEST_F(BinlogDecoderTest, UnsignedIdsPrintUnsigned) {
  std::vector<Column> cols = kDemo;
  known_["app.q"].id_unsigned = true;
  Ok(TableMap(7, "app", "q", cols));
  DecodedEvent d =
      Ok(Rows(kWriteRowsV1, 7, 6, {DemoRow(-1, 50, 0, std::nullopt)}));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].id, "18446744073709551615");
  // The table map's SIGNEDNESS metadata wins: first numeric column signed.
  Ok(TableMap(8, "app", "q", cols, Le(1, 1) + Le(1, 1) + Le(0x00, 1)));
  d = Ok(Rows(kWriteRowsV1, 8, 6, {DemoRow(-1, 50, 0, std::nullopt)}));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].id, "-1");
}

TEST_F(BinlogDecoderTest, RowsOfOtherTablesOrChangedTablesAreSkipped) {
  Ok(TableMap(7, "app", "other", kDemo));
  EXPECT_TRUE(
      Ok(Rows(kWriteRowsV1, 7, 6, {DemoRow(1, 0, 0, 0)})).changes.empty());
  std::vector<Column> wider = kDemo;
  wider.push_back({kBigT, ""});
  Ok(TableMap(8, "app", "q", wider));
  EXPECT_TRUE(
      Ok(Rows(kWriteRowsV1, 8, 7, {DemoRow(1, 0, 0, 0) + std::string(8, '\0')}))
          .changes.empty());
  // Unknown table id.
  EXPECT_TRUE(
      Ok(Rows(kWriteRowsV1, 99, 6, {DemoRow(1, 0, 0, 0)})).changes.empty());
}

TEST_F(BinlogDecoderTest, GtidIsCommittedByXidOrByTheStandaloneStatement) {
  EXPECT_EQ(Ok(Gtid(5, 0, false, false, 3)).committed_gtid, std::nullopt);
  EXPECT_EQ(Ok(Query("app", "BEGIN")).committed_gtid, std::nullopt);
  DecodedEvent x = Ok(Xid());
  EXPECT_THAT(x.committed_gtid, Optional(std::string("0-3-5")));
  EXPECT_EQ(Ok(Xid()).committed_gtid, std::nullopt);  // nothing pending
  Ok(Gtid(6, 2, true, false, 3));
  DecodedEvent q = Ok(Query("app", "CREATE TABLE x (a int)"));
  EXPECT_THAT(q.committed_gtid, Optional(std::string("2-3-6")));
  EXPECT_EQ(q.committed_domain, 2u);
}

// Each change carries the GTID of the group that made it, so that a write
// of msgq's is known by the GTID its commit reported.
TEST_F(BinlogDecoderTest, ChangesCarryTheirGroupsGtid) {
  Ok(TableMap(7, "app", "q", kDemo));
  DecodedEvent before =
      Ok(Rows(kWriteRowsV1, 7, 6, {DemoRow(1, 50, 0, std::nullopt)}));
  ASSERT_EQ(before.changes.size(), 1u);
  EXPECT_EQ(before.changes[0].gtid, "");  // no group named yet
  Ok(Gtid(41, 1, false, false, 3));
  DecodedEvent d = Ok(
      Rows(kUpdateRowsV1, 7, 6,
           {DemoRow(1, 50, 0, std::nullopt), DemoRow(1, 50, 7, std::nullopt)}));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].gtid, "1-3-41");
  EXPECT_THAT(Ok(Xid()).committed_gtid, Optional(std::string("1-3-41")));
}

// Each change knows where its rows event ends: the file the last ROTATE
// named (without the checksum the next format description announces) and
// the header's next position.
TEST_F(BinlogDecoderTest, ChangesCarryTheirBinlogPosition) {
  auto at = [](std::string event, uint32_t next) {
    event.replace(13, 4, Le(next, 4));
    return event;
  };
  Ok(TableMap(7, "app", "q", kDemo));
  DecodedEvent first =
      Ok(at(Rows(kWriteRowsV1, 7, 6, {DemoRow(1, 0, 0, std::nullopt)}), 500));
  ASSERT_EQ(first.changes.size(), 1u);
  EXPECT_FALSE(first.changes[0].position.known());  // no file named yet
  Ok(Event(kRotateEvent, Le(4, 8) + "binlog.000007", /*checksum=*/true));
  Ok(FormatDescription(/*crc32=*/false));
  Ok(Event(kRotateEvent, Le(4, 8) + "binlog.000008", /*checksum=*/true));
  Ok(FormatDescription(/*crc32=*/true));
  Ok(TableMap(7, "app", "q", kDemo, "", /*checksum=*/true));
  DecodedEvent d = Ok(at(
      Rows(kWriteRowsV1, 7, 6, {DemoRow(2, 0, 0, std::nullopt)}, true), 1234));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].position, (BinlogPosition{"binlog.000008", 1234}));
}

// As MariaDB 10.11 writes them: the prepared group (GTID with the XA id,
// rows, XA END, XA_PREPARE), later a group with XA COMMIT or ROLLBACK.
TEST_F(BinlogDecoderTest, XaGroupsCommitNothingUntilTheirOutcome) {
  Ok(TableMap(7, "app", "q", kDemo));
  DecodedEvent start = Ok(XaGtid(5, /*prepared=*/true, "abc"));
  EXPECT_EQ(start.step, TransactionStep::kXaStart);
  EXPECT_EQ(start.xid, "1:3:abc");
  EXPECT_EQ(Ok(Rows(kWriteRowsV1, 7, 6, {DemoRow(1, 0, 0, std::nullopt)}))
                .changes.size(),
            1u);
  DecodedEvent end = Ok(Query("app", "XA END X'616263',X'',1"));
  EXPECT_EQ(end.step, TransactionStep::kNone);
  EXPECT_EQ(end.committed_gtid, std::nullopt);
  DecodedEvent prepare = Ok(XaPrepare("abc"));
  EXPECT_EQ(prepare.step, TransactionStep::kXaPrepare);
  EXPECT_EQ(prepare.xid, "1:3:abc");
  EXPECT_THAT(prepare.committed_gtid, Optional(std::string("0-1-5")));

  EXPECT_EQ(Ok(XaGtid(6, /*prepared=*/false, "abc")).step,
            TransactionStep::kNone);
  DecodedEvent commit = Ok(Query("app", "XA COMMIT X'616263',X'',1"));
  EXPECT_EQ(commit.step, TransactionStep::kXaCommit);
  EXPECT_EQ(commit.xid, "1:3:abc");
  EXPECT_THAT(commit.committed_gtid, Optional(std::string("0-1-6")));
  EXPECT_TRUE(commit.resets.empty());

  Ok(XaGtid(7, /*prepared=*/false, "zZ", 7));
  DecodedEvent rollback = Ok(Query("app", "XA ROLLBACK X'7a5a',X'',7"));
  EXPECT_EQ(rollback.step, TransactionStep::kXaRollback);
  EXPECT_EQ(rollback.xid, "7:2:zZ");
  // After the XA groups, ordinary ones as before.
  Ok(Gtid(8, 0, false));
  EXPECT_EQ(Ok(Query("app", "BEGIN")).step, TransactionStep::kNone);
  DecodedEvent xid = Ok(Xid());
  EXPECT_EQ(xid.step, TransactionStep::kCommit);
  EXPECT_THAT(xid.committed_gtid, Optional(std::string("0-1-8")));
  Ok(Gtid(9, 0, true));
  EXPECT_EQ(Ok(Query("app", "CREATE TABLE x (a int)")).step,
            TransactionStep::kCommit);
  // XA COMMIT ... ONE PHASE, should it come as an XA_PREPARE event, commits.
  Ok(XaGtid(10, /*prepared=*/true, "one"));
  EXPECT_EQ(Ok(XaPrepare("one", /*one_phase=*/true)).step,
            TransactionStep::kCommit);
}

TEST_F(BinlogDecoderTest, TruncatedXaEventsAreDataLoss) {
  for (const std::string& whole : {XaGtid(5, true, "abc"), XaPrepare("abc")}) {
    for (size_t n = 0; n < whole.size(); ++n) {
      std::string cut = whole.substr(0, n);
      if (n >= 13) cut.replace(9, 4, Le(n, 4));
      absl::StatusOr<DecodedEvent> d = decoder_.Decode(cut);
      EXPECT_FALSE(d.ok()) << n;
      EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << n;
    }
  }
}

TEST_F(BinlogDecoderTest, ChecksumAnnouncedByFormatDescriptionIsStripped) {
  Ok(FormatDescription(/*crc32=*/true));
  EXPECT_TRUE(decoder_.checksum());
  Ok(TableMap(7, "app", "q", kDemo, "", /*checksum=*/true));
  DecodedEvent d = Ok(Rows(kWriteRowsV1, 7, 6, {DemoRow(4, 1, 2, 3)}, true));
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].id, "4");
  EXPECT_THAT(d.changes[0].time_acked, Optional(3));
  Ok(Gtid(1, 0, false, true));
  EXPECT_THAT(Ok(Xid(true)).committed_gtid, Optional(std::string("0-1-1")));
  Ok(FormatDescription(false));
  EXPECT_FALSE(decoder_.checksum());
}

// Every truncation of a valid event (with a consistent size field) is
// DATA_LOSS, never a crash; the decoder keeps working afterwards.
TEST_F(BinlogDecoderTest, TruncatedEventsAreDataLoss) {
  const std::string map = TableMap(7, "app", "q", kDemo);
  const std::string rows =
      Rows(kUpdateRowsV1, 7, 6,
           {DemoRow(1, 50, 0, std::nullopt), DemoRow(1, 50, 1, 2)});
  Ok(map);
  for (const std::string& whole :
       {map, rows, Gtid(1, 0, false), Query("app", "BEGIN")}) {
    for (size_t n = 0; n < whole.size(); ++n) {
      std::string cut = whole.substr(0, n);
      if (n >= 13) cut.replace(9, 4, Le(n, 4));
      absl::StatusOr<DecodedEvent> d = decoder_.Decode(cut);
      if (!d.ok()) {
        EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << n;
      }
    }
  }
  EXPECT_EQ(decoder_.Decode(map.substr(0, 10)).status().code(),
            absl::StatusCode::kDataLoss);
  Ok(map);
  EXPECT_EQ(Ok(rows).changes.size(), 1u);
}

TEST_F(BinlogDecoderTest, CompressedRowsOfMessageTablesAreUnimplemented) {
  Ok(TableMap(7, "app", "q", kDemo));
  Ok(TableMap(8, "app", "other", kDemo));
  const std::string body = Le(7, 6) + Le(1, 2) + "zlib...";
  EXPECT_EQ(decoder_.Decode(Event(169, body)).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(decoder_.Decode(Event(166, body)).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(Ok(Event(169, Le(8, 6) + Le(1, 2) + "zlib")).changes.empty());
}

// Found by the fuzzer: no column present made every row image empty and the
// row loop never ended.
TEST_F(BinlogDecoderTest, RowImageWithoutColumnsIsDataLoss) {
  Ok(TableMap(7, "app", "q", kDemo));
  const std::string body =
      Le(7, 6) + Le(1, 2) + Le(6, 1) + std::string(1, '\0') + "xx";
  EXPECT_EQ(decoder_.Decode(Event(kWriteRowsV1, body)).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(BinlogDecoderTest, IdOfUnsupportedTypeIsUnimplemented) {
  std::vector<Column> cols = kDemo;
  cols[0] = {5, Le(8, 1)};  // double id
  Ok(TableMap(7, "app", "q", cols));
  EXPECT_EQ(decoder_.Decode(Rows(kWriteRowsV1, 7, 6, {DemoRow(1, 0, 0, 0)}))
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(BinlogDecoderTest, DdlOfMessageTablesIsReportedAsReset) {
  known_["other.r"] = kDemoColumns;
  Ok(Gtid(9, 0, true));
  DecodedEvent d = Ok(Query("app", "TRUNCATE TABLE q"));
  EXPECT_THAT(d.committed_gtid, Optional(std::string("0-1-9")));
  EXPECT_THAT(d.resets, ElementsAre(TableName{"app", "q"}));
  d = Ok(Query("app",
               "DROP TABLE IF EXISTS `x`, other.r, q "
               "/* generated by server */"));
  EXPECT_THAT(d.resets,
              ElementsAre(TableName{"other", "r"}, TableName{"app", "q"}));
  EXPECT_TRUE(Ok(Query("app", "ALTER TABLE x ADD y int")).resets.empty());
  EXPECT_TRUE(Ok(Query("other", "TRUNCATE q")).resets.empty());
  EXPECT_TRUE(Ok(Query("app", "INSERT INTO q VALUES (1)")).resets.empty());
  EXPECT_THAT(Ok(Query("app", "RENAME TABLE q TO q_old")).resets,
              ElementsAre(TableName{"app", "q"}));
}

// Tables msgq does not serve yet that a statement creates, alters, replaces
// or renames to: any may be a message table now.
TEST_F(BinlogDecoderTest, DdlDefiningOtherTablesIsReported) {
  EXPECT_THAT(Ok(Query("app", "CREATE TABLE r (id bigint)")).defined,
              ElementsAre(TableName{"app", "r"}));
  EXPECT_THAT(
      Ok(Query("app", "ALTER TABLE x COMMENT 'vitess_message'")).defined,
      ElementsAre(TableName{"app", "x"}));
  EXPECT_THAT(
      Ok(Query("app", "CREATE OR REPLACE TABLE other.s (a int)")).defined,
      ElementsAre(TableName{"other", "s"}));
  DecodedEvent renamed = Ok(Query("app", "RENAME TABLE q TO q2, y TO z"));
  EXPECT_THAT(renamed.resets, ElementsAre(TableName{"app", "q"}));
  EXPECT_THAT(renamed.defined,
              ElementsAre(TableName{"app", "q2"}, TableName{"app", "z"}));
  // CREATE TABLE IF NOT EXISTS of a served table changes nothing.
  DecodedEvent again = Ok(Query("app", "CREATE TABLE IF NOT EXISTS q (a int)"));
  EXPECT_TRUE(again.resets.empty());
  EXPECT_TRUE(again.defined.empty());
  EXPECT_TRUE(Ok(Query("app", "DROP TABLE x")).defined.empty());
  EXPECT_TRUE(Ok(Query("app", "TRUNCATE x")).defined.empty());
  EXPECT_TRUE(
      Ok(Query("app", "ALTER TABLE x DROP PARTITION p1")).defined.empty());
  EXPECT_TRUE(Ok(Query("app", "INSERT INTO x VALUES (1)")).defined.empty());
}

// msgqd's partition purge commits DDL on its own tables every purge step;
// the statement commits (the GTID moves on) but resets nothing, while a
// user's real ALTER of the same table still does.
TEST_F(BinlogDecoderTest, PartitionMaintenanceIsNotAReset) {
  Ok(Gtid(11, 0, true));
  DecodedEvent d =
      Ok(Query("app", "ALTER TABLE `app`.`q` DROP PARTITION `p1`"));
  EXPECT_THAT(d.committed_gtid, Optional(std::string("0-1-11")));
  EXPECT_TRUE(d.resets.empty());
  EXPECT_TRUE(Ok(Query("app",
                       "ALTER TABLE q REORGANIZE PARTITION pmax INTO "
                       "(PARTITION p2 VALUES LESS THAN (2), PARTITION pmax "
                       "VALUES LESS THAN MAXVALUE)"))
                  .resets.empty());
  EXPECT_THAT(Ok(Query("app", "ALTER TABLE q ADD COLUMN note int")).resets,
              ElementsAre(TableName{"app", "q"}));
}

// The table-id map is cleared on rotate and format description events and
// never grows past its bound (FLUSH TABLES and ALTERs hand out new ids).
TEST(BinlogDecoderTableMap, ClearedOnRotateAndBounded) {
  BinlogDecoder decoder(
      [](const std::string&, const std::string&) {
        return std::optional(kDemoColumns);
      },
      /*max_tables=*/4);
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(decoder.Decode(TableMap(id, "app", "q", kDemo)).ok());
  }
  EXPECT_EQ(decoder.mapped_tables(), 3u);
  ASSERT_TRUE(decoder.Decode(binlog_test::Rotate()).ok());
  EXPECT_EQ(decoder.mapped_tables(), 0u);
  ASSERT_TRUE(decoder.Decode(TableMap(1, "app", "q", kDemo)).ok());
  ASSERT_TRUE(decoder.Decode(FormatDescription(false)).ok());
  EXPECT_EQ(decoder.mapped_tables(), 0u);
  for (uint64_t id = 1; id <= 100; ++id) {
    ASSERT_TRUE(decoder.Decode(TableMap(id, "app", "q", kDemo)).ok());
    EXPECT_LE(decoder.mapped_tables(), 4u);
    // The newest mapping always works.
    absl::StatusOr<DecodedEvent> d =
        decoder.Decode(Rows(kWriteRowsV1, id, 6, {DemoRow(1, 0, 0, 0)}));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->changes.size(), 1u) << id;
  }
}

// Real events written by MariaDB (the fuzzer's seed corpus): a stream with
// inserts, an update and a delete of msgq.q.
TEST(BinlogDecoderRealEvents, DecodesACapturedStream) {
  std::ifstream in(
      std::string(MSGQ_SOURCE_DIR) + "/fuzz/corpus/binlog_decoder/stream_q.bin",
      std::ios::binary);
  ASSERT_TRUE(in.good());
  const std::string data((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  BinlogDecoder decoder([](const std::string& db, const std::string& table) {
    if (db != "msgq") return std::optional<BookkeepingColumns>();
    if (table == "q") return std::optional(kDemoColumns);
    // id varchar, priority int, epoch, time_next, time_acked, then 14 more.
    if (table == "t") return std::optional(BookkeepingColumns{19, 0, 1, 3, 4});
    if (table == "u") {
      return std::optional(BookkeepingColumns{5, 0, 1, 3, 4, true});
    }
    return std::optional<BookkeepingColumns>();
  });
  std::vector<std::string> seen, gtids;
  for (size_t at = 0; at + kBinlogHeaderSize <= data.size();) {
    const uint32_t size = static_cast<uint8_t>(data[at + 9]) |
                          static_cast<uint8_t>(data[at + 10]) << 8 |
                          static_cast<uint8_t>(data[at + 11]) << 16;
    absl::StatusOr<DecodedEvent> d = decoder.Decode(data.substr(at, size));
    ASSERT_TRUE(d.ok()) << d.status() << " at " << at;
    for (const RowChange& c : d->changes) {
      seen.push_back(absl::StrCat(c.deleted ? "-" : "+", c.id, "/",
                                  c.time_acked.value_or(-1)));
    }
    if (d->committed_gtid) gtids.push_back(*d->committed_gtid);
    at += size;
  }
  EXPECT_TRUE(decoder.checksum());
  EXPECT_THAT(seen, ElementsAre("+1/-1", "+2/-1", "+07/-1", "++7/-1",
                                "+18446744073709551615/-1", "+1/123", "-2/-1",
                                "+3/-1", "+5/-1"));
  EXPECT_EQ(gtids.size(), 15u);
}

}  // namespace
}  // namespace msgq
