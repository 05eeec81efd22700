// BinlogDecoder with row images (BookkeepingColumns::streamed): which row
// changes carry their streamed columns rendered (RowChange::row), and which
// do not (acked, deleted, unscheduled, msgq's own postpones, a column left
// out of the image or of another type than the schema said).
#include <optional>
#include <string>
#include <vector>

#include "engine/binlog/binlog_decoder.h"
#include "engine/binlog/binlog_event_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using binlog::TextForm;
using binlog_test::Column;
using binlog_test::Event;
using binlog_test::Image;
using binlog_test::Le;
using binlog_test::Rows;
using binlog_test::TableMap;
using ::testing::ElementsAre;

constexpr uint8_t kTinyT = 1, kLongT = 3, kBigT = 8, kBlobT = 252;

// id bigint, priority tinyint, epoch bigint, time_next bigint, time_acked
// bigint, message json (a LONGBLOB): the streamed columns are id and
// message.
const std::vector<Column> kTable = {{kBigT, ""}, {kTinyT, ""},
                                    {kBigT, ""}, {kBigT, ""},
                                    {kBigT, ""}, {kBlobT, Le(4, 1)}};

BookkeepingColumns ImageColumns() {
  BookkeepingColumns c{6, 0, 1, 3, 4};
  c.epoch = 2;
  c.streamed = {{0, TextForm::kSigned}, {5, TextForm::kBytes}};
  return c;
}

std::string Row(int64_t id, int64_t epoch, std::optional<int64_t> next,
                std::optional<int64_t> acked,
                std::optional<std::string> message) {
  std::optional<std::string> m;
  if (message) m = Le(message->size(), 4) + *message;
  return Image({Le(id, 8), Le(5, 1), Le(epoch, 8),
                next ? std::optional(Le(*next, 8)) : std::nullopt,
                acked ? std::optional(Le(*acked, 8)) : std::nullopt, m});
}

class BinlogDecoderImageTest : public ::testing::Test {
 protected:
  BinlogDecoderImageTest()
      : decoder_([this](const std::string& db, const std::string& table)
                     -> std::optional<BookkeepingColumns> {
          if (db != "app" || table != "q") return std::nullopt;
          return columns_;
        }) {}

  std::vector<RowChange> Decode(const std::string& event) {
    absl::StatusOr<DecodedEvent> d = decoder_.Decode(event);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? d->changes : std::vector<RowChange>();
  }

  BookkeepingColumns columns_ = ImageColumns();
  BinlogDecoder decoder_;
};

TEST_F(BinlogDecoderImageTest, ADueInsertCarriesItsStreamedColumnsAsText) {
  ASSERT_TRUE(decoder_.Decode(TableMap(7, "app", "q", kTable)).ok());
  std::vector<RowChange> changes =
      Decode(Rows(kWriteRowsV1, 7, 6,
                  {Row(-12, 0, 100, std::nullopt, R"({"a":1})"),
                   Row(13, 2, 100, std::nullopt, std::nullopt)}));
  ASSERT_EQ(changes.size(), 2u);
  ASSERT_NE(changes[0].row, nullptr);
  EXPECT_THAT(changes[0].row->lengths, ElementsAre(3, 7));
  EXPECT_EQ(changes[0].row->values, R"(-12{"a":1})");
  EXPECT_EQ(changes[0].epoch, 0);
  EXPECT_EQ(changes[0].event_time, 1700000000);
  // A NULL streamed column is length -1; the epoch comes with the image.
  ASSERT_NE(changes[1].row, nullptr);
  EXPECT_THAT(changes[1].row->lengths, ElementsAre(2, -1));
  EXPECT_EQ(changes[1].row->values, "13");
  EXPECT_EQ(changes[1].epoch, 2);
}

TEST_F(BinlogDecoderImageTest, AckedUnscheduledAndDeletedRowsCarryNoImage) {
  ASSERT_TRUE(decoder_.Decode(TableMap(7, "app", "q", kTable)).ok());
  std::vector<RowChange> changes = Decode(Rows(
      kWriteRowsV1, 7, 6,
      {Row(1, 0, 100, 200, "x"), Row(2, 0, std::nullopt, std::nullopt, "y")}));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].row, nullptr);
  EXPECT_EQ(changes[1].row, nullptr);
  changes =
      Decode(Rows(kDeleteRowsV2, 7, 6, {Row(3, 0, 100, std::nullopt, "z")}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].deleted);
  EXPECT_EQ(changes[0].row, nullptr);
}

// msgq's own postpone raises the epoch: no image. An application's update
// that leaves the epoch (a new payload, a redrive to epoch 0) has one.
TEST_F(BinlogDecoderImageTest, OnlyUpdatesThatDoNotRaiseTheEpochCarryOne) {
  ASSERT_TRUE(decoder_.Decode(TableMap(7, "app", "q", kTable)).ok());
  std::vector<RowChange> changes = Decode(Rows(
      kUpdateRowsV1, 7, 6,
      {Row(1, 0, 100, std::nullopt, "a"), Row(1, 1, 900, std::nullopt, "a"),
       Row(2, 1, 100, std::nullopt, "b"), Row(2, 1, 100, std::nullopt, "B"),
       Row(3, 4, 100, std::nullopt, "c"), Row(3, 0, 100, std::nullopt, "c")}));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].row, nullptr);
  ASSERT_NE(changes[1].row, nullptr);
  EXPECT_EQ(changes[1].row->values, "2B");
  ASSERT_NE(changes[2].row, nullptr);
  EXPECT_EQ(changes[2].epoch, 0);
}

// binlog_row_image=NOBLOB can leave a column out of an update's image.
TEST_F(BinlogDecoderImageTest, AStreamedColumnLeftOutOfTheImageMeansNone) {
  ASSERT_TRUE(decoder_.Decode(TableMap(7, "app", "q", kTable)).ok());
  const std::string before = Row(1, 0, 100, std::nullopt, "a");
  // The after image has columns 0-4 (bit 5 clear); of those, the 5th
  // (time_acked) is NULL.
  const std::string after_image =
      std::string(1, '\x10') + Le(1, 8) + Le(5, 1) + Le(0, 8) + Le(100, 8);
  std::string body = Le(7, 6) + Le(1, 2) + Le(6, 1) + std::string(1, '\x3f') +
                     std::string(1, '\x1f') + before + after_image;
  std::vector<RowChange> changes = Decode(Event(kUpdateRowsV1, body));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].id, "1");
  EXPECT_EQ(changes[0].row, nullptr);
}

// The schema said the message is text, the binlog says INT (an ALTER since):
// the change is still reported, without an image.
TEST_F(BinlogDecoderImageTest, AColumnOfAnotherTypeThanTheSchemaSaidMeansNone) {
  std::vector<Column> altered = kTable;
  altered[5] = {kLongT, ""};
  ASSERT_TRUE(decoder_.Decode(TableMap(7, "app", "q", altered)).ok());
  std::vector<RowChange> changes =
      Decode(Rows(kWriteRowsV1, 7, 6,
                  {Image({Le(1, 8), Le(5, 1), Le(0, 8), Le(100, 8),
                          std::nullopt, Le(42, 4)})}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].id, "1");
  EXPECT_EQ(changes[0].row, nullptr);
}

// Without BookkeepingColumns::streamed nothing is rendered.
TEST_F(BinlogDecoderImageTest, NoStreamedColumnsNoImages) {
  columns_.streamed.clear();
  ASSERT_TRUE(decoder_.Decode(TableMap(7, "app", "q", kTable)).ok());
  std::vector<RowChange> changes =
      Decode(Rows(kWriteRowsV1, 7, 6, {Row(1, 0, 100, std::nullopt, "a")}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].row, nullptr);
}

}  // namespace
}  // namespace msgq
