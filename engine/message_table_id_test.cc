// Message ids: which IdKind BuildMessageTable infers from the id column's
// type (signed or unsigned integer, text, binary), and CanonicalId, which
// turns a client's id into the spelling the table stores (integers without
// leading zeros or a negative zero, text and binary unchanged) and refuses
// malformed ones with INVALID_ARGUMENT and an escaped message.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/message_table.h"
#include "engine/message_table_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::message_table_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct IdKindCase {
  Column id;
  IdKind expected;
};

class IdKindTest : public ::testing::TestWithParam<IdKindCase> {};

TEST_P(IdKindTest, FromIdColumnType) {
  std::vector<Column> columns = DemoColumns();
  columns[0] = GetParam().id;
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->id_kind, GetParam().expected)
      << GetParam().id.data_type << " / " << GetParam().id.column_type;
}

INSTANTIATE_TEST_SUITE_P(
    Types, IdKindTest,
    ::testing::Values(
        IdKindCase{Col("id", "bigint", "bigint(20)"), IdKind::kSignedInteger},
        IdKindCase{Col("id", "bigint", "bigint(20) unsigned"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "BIGINT", "BIGINT(20) UNSIGNED"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "int", "int(11)"), IdKind::kSignedInteger},
        IdKindCase{Col("id", "int", "int(10) unsigned zerofill"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "tinyint", "tinyint(4)"), IdKind::kSignedInteger},
        IdKindCase{Col("id", "smallint", "smallint(6)"),
                   IdKind::kSignedInteger},
        IdKindCase{Col("id", "mediumint", "mediumint(8) unsigned"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "varchar", "varchar(64)"), IdKind::kText},
        IdKindCase{Col("id", "char", "char(36)"), IdKind::kText},
        IdKindCase{Col("id", "varbinary", "varbinary(16)"), IdKind::kBinary},
        IdKindCase{Col("id", "binary", "binary(16)"), IdKind::kBinary},
        IdKindCase{Col("id", "blob", "blob"), IdKind::kBinary}));

TEST(CanonicalIdTest, SignedIntegers) {
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "7"), "7");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "007"), "7");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "0"), "0");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "-1"), "-1");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "-0"), "0");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "9223372036854775807"),
            "9223372036854775807");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "-9223372036854775808"),
            "-9223372036854775808");
}

TEST(CanonicalIdTest, UnsignedIntegers) {
  EXPECT_EQ(*CanonicalId(IdKind::kUnsignedInteger, "42"), "42");
  EXPECT_EQ(*CanonicalId(IdKind::kUnsignedInteger, "00042"), "42");
  EXPECT_EQ(*CanonicalId(IdKind::kUnsignedInteger, "18446744073709551615"),
            "18446744073709551615");
}

TEST(CanonicalIdTest, MalformedIntegersAreInvalidArgument) {
  struct Case {
    IdKind kind;
    const char* id;
  };
  for (const Case& c : {
           Case{IdKind::kSignedInteger, "abc"},
           Case{IdKind::kSignedInteger, "12abc"},
           Case{IdKind::kSignedInteger, "1.5"},
           Case{IdKind::kSignedInteger, "1e3"},
           Case{IdKind::kSignedInteger, "0x10"},
           Case{IdKind::kSignedInteger, " 7"},
           Case{IdKind::kSignedInteger, "7 "},
           Case{IdKind::kSignedInteger, "+7"},
           Case{IdKind::kSignedInteger, "-"},
           Case{IdKind::kSignedInteger, "9223372036854775808"},
           Case{IdKind::kSignedInteger, "-9223372036854775809"},
           Case{IdKind::kSignedInteger, "1;DROP TABLE t"},
           Case{IdKind::kUnsignedInteger, "-1"},
           Case{IdKind::kUnsignedInteger, "-0"},
           Case{IdKind::kUnsignedInteger, "+1"},
           Case{IdKind::kUnsignedInteger, "abc"},
           Case{IdKind::kUnsignedInteger, "18446744073709551616"},
       }) {
    const absl::StatusOr<std::string> id = CanonicalId(c.kind, c.id);
    ASSERT_FALSE(id.ok()) << '"' << c.id << "\" gave " << *id;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << c.id;
    EXPECT_THAT(id.status().message(), HasSubstr("malformed message id"))
        << c.id;
  }
}

TEST(CanonicalIdTest, MalformedIdIsEscapedInTheMessage) {
  const absl::StatusOr<std::string> id =
      CanonicalId(IdKind::kSignedInteger, std::string("a\n\"b\0", 5));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(id.status().message(), Not(HasSubstr("\n")));
}

TEST(CanonicalIdTest, EmptyIsInvalidForEveryKind) {
  for (IdKind kind : {IdKind::kSignedInteger, IdKind::kUnsignedInteger,
                      IdKind::kBinary, IdKind::kText}) {
    const absl::StatusOr<std::string> id = CanonicalId(kind, "");
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(CanonicalIdTest, TextAndBinaryIdsAreUnchanged) {
  for (IdKind kind : {IdKind::kText, IdKind::kBinary}) {
    for (const std::string& s :
         {std::string("007"), std::string(" padded "), std::string("abc"),
          std::string("it's"), std::string("\x00\x01", 2),
          std::string("\xc3\xa9"), std::string("-1")}) {
      const absl::StatusOr<std::string> id = CanonicalId(kind, s);
      ASSERT_TRUE(id.ok()) << id.status();
      EXPECT_EQ(*id, s);
    }
  }
  EXPECT_EQ(*CanonicalId(IdKind::kBinary, "\xff"), "\xff");
}

TEST(CanonicalIdTest, TextIdsMustBeUtf8) {
  const absl::StatusOr<std::string> id = CanonicalId(IdKind::kText, "a\xff");
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(id.status().message()),
            "malformed message id \"a\\xff\": the id column is text and the "
            "id is not UTF-8");
}

}  // namespace
}  // namespace msgq::message_table_test
