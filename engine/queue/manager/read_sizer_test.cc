#include "engine/queue/manager/read_sizer.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

// A row of `values` bytes in one column: values + 10 bytes on the wire.
Message Row(size_t values) {
  Message m;
  auto row = std::make_shared<PackedRow>();
  row->lengths = {static_cast<int64_t>(values)};
  row->values = std::string(values, 'x');
  m.row = row;
  return m;
}

TEST(ReadSizerTest, UnboundedUntilARowWasRead) {
  ReadSizer sizer(1000);
  EXPECT_EQ(sizer.RowsFor(1000), INT32_MAX);
  EXPECT_FALSE(sizer.Note({}));
  EXPECT_EQ(sizer.RowsFor(1000), INT32_MAX);
}

TEST(ReadSizerTest, JudgesByTheLargestRowOfTheLastRead) {
  ReadSizer sizer(1000);
  EXPECT_FALSE(sizer.Note({Row(40), Row(90), Row(10)}));  // 170 bytes
  EXPECT_EQ(sizer.RowsFor(1000), 10);                     // 100 bytes each
  EXPECT_EQ(sizer.RowsFor(50), 1);                        // at least one
  EXPECT_EQ(sizer.RowsFor(0), 1);
  // A read of no rows keeps the size; a later one replaces it.
  EXPECT_FALSE(sizer.Note({}));
  EXPECT_EQ(sizer.RowsFor(1000), 10);
  EXPECT_FALSE(sizer.Note({Row(240)}));
  EXPECT_EQ(sizer.RowsFor(1000), 4);
}

TEST(ReadSizerTest, SaysWhenTheReadReachedTheBound) {
  ReadSizer sizer(300);
  EXPECT_FALSE(sizer.Note({Row(90), Row(90)}));          // 200
  EXPECT_TRUE(sizer.Note({Row(90), Row(90), Row(90)}));  // 300
}

}  // namespace
}  // namespace msgq
