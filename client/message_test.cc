#include "msgq/message.h"

#include <memory>
#include <optional>
#include <string>

#include "client/internal/decode_row.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

std::shared_ptr<const Schema> MakeSchema() {
  absl::StatusOr<std::shared_ptr<const Schema>> schema = Schema::FromColumns(
      {{"id", "bigint"}, {"message", "text"}, {"note", "varchar"}});
  EXPECT_TRUE(schema.ok()) << schema.status();
  return *schema;
}

v1::Row MakeRow(std::initializer_list<int64_t> lengths, std::string values) {
  v1::Row row;
  for (int64_t length : lengths) row.add_lengths(length);
  row.set_values(std::move(values));
  return row;
}

TEST(SchemaTest, FromFieldsKeepsOrderAndIndexesByName) {
  v1::MessageStreamResponse response;
  response.add_fields()->set_name("id");
  response.add_fields()->set_name("message");
  response.mutable_fields(1)->set_type("json");
  absl::StatusOr<std::shared_ptr<const Schema>> schema =
      SchemaFromFields(response.fields());
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ((*schema)->size(), 2u);
  EXPECT_EQ((*schema)->column(1).type, "json");
  EXPECT_EQ((*schema)->IndexOf("message"), 1u);
  EXPECT_EQ((*schema)->IndexOf("Message"), std::nullopt);
}

TEST(SchemaTest, RejectsEmptyFieldsAndNames) {
  EXPECT_EQ(Schema::FromColumns({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Schema::FromColumns({{"id", "bigint"}, {"", "text"}}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(DecodeRowTest, SplitsValuesAndKeepsNullDistinctFromEmpty) {
  absl::StatusOr<Message> msg =
      DecodeRow(MakeSchema(), MakeRow({2, 5, -1}, "42hello"));
  ASSERT_TRUE(msg.ok()) << msg.status();
  EXPECT_EQ(msg->id(), "42");
  EXPECT_EQ(msg->Get("message"), "hello");
  EXPECT_EQ(msg->Get(size_t{1}), "hello");
  EXPECT_EQ(msg->Get("note"), std::nullopt);
  EXPECT_TRUE(msg->IsNull("note"));
  EXPECT_TRUE(msg->HasColumn("note"));
  EXPECT_FALSE(msg->IsNull("message"));
  EXPECT_EQ(msg->Get("missing"), std::nullopt);
  EXPECT_FALSE(msg->HasColumn("missing"));
  EXPECT_FALSE(msg->IsNull("missing"));
  EXPECT_EQ(msg->Get(size_t{3}), std::nullopt);

  absl::StatusOr<Message> empty =
      DecodeRow(MakeSchema(), MakeRow({1, 0, 0}, "7"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->Get("message"), "");
  EXPECT_FALSE(empty->IsNull("message"));
}

TEST(DecodeRowTest, CarriesTheEpochAndNamesTheDelivery) {
  v1::Row row = MakeRow({2, 1, -1}, "42x");
  absl::StatusOr<Message> first = DecodeRow(MakeSchema(), row);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->epoch(), 0);
  EXPECT_EQ(first->delivery(), (Delivery{"42", 0}));

  row.set_epoch(3);
  absl::StatusOr<Message> fourth = DecodeRow(MakeSchema(), row);
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  EXPECT_EQ(fourth->epoch(), 3);
  EXPECT_EQ(fourth->delivery().id, "42");
  EXPECT_EQ(fourth->delivery().epoch, 3);
  EXPECT_NE(fourth->delivery(), first->delivery());

  row.set_epoch(-1);
  absl::StatusOr<Message> negative = DecodeRow(MakeSchema(), row);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(negative.status().message(), "malformed row: negative epoch -1");
}

TEST(DecodeRowTest, KeepsBinaryBytes) {
  std::string values("1a\0b", 4);
  absl::StatusOr<Message> msg =
      DecodeRow(MakeSchema(), MakeRow({1, 3, -1}, values));
  ASSERT_TRUE(msg.ok()) << msg.status();
  EXPECT_EQ(msg->Get("message"), absl::string_view("a\0b", 3));
}

TEST(DecodeRowTest, CopiesOutliveTheRow) {
  std::optional<Message> copy;
  {
    absl::StatusOr<Message> msg =
        DecodeRow(MakeSchema(), MakeRow({1, 2, 1}, "9hix"));
    ASSERT_TRUE(msg.ok());
    copy = *msg;
  }
  EXPECT_EQ(copy->id(), "9");
  EXPECT_EQ(copy->Get("note"), "x");
}

TEST(DecodeRowTest, RejectsMalformedRows) {
  struct Case {
    const char* what;
    v1::Row row;
  };
  const Case cases[] = {
      {"too few lengths", MakeRow({1, 1}, "12")},
      {"too many lengths", MakeRow({1, 1, 1, 1}, "1234")},
      {"length below -1", MakeRow({1, -2, 0}, "1")},
      {"values too short", MakeRow({1, 5, 0}, "1ab")},
      {"values too long", MakeRow({1, 1, 1}, "1abc")},
      {"null id", MakeRow({-1, 1, 1}, "ab")},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecodeRow(MakeSchema(), c.row).status().code(),
              absl::StatusCode::kInternal)
        << c.what;
  }
}

}  // namespace
}  // namespace msgq
