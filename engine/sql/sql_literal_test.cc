#include "engine/sql/sql_literal.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::HasSubstr;

std::string Lit(IdKind kind, absl::string_view id) {
  absl::StatusOr<std::string> s = IdLiteral(kind, id);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "<error>";
}

absl::StatusCode Code(IdKind kind, absl::string_view id) {
  return IdLiteral(kind, id).status().code();
}

TEST(SqlLiteralTest, SignedIntegersAreCanonicalDecimalsInRange) {
  EXPECT_EQ(Lit(IdKind::kSignedInteger, "7"), "7");
  EXPECT_EQ(Lit(IdKind::kSignedInteger, "0"), "0");
  EXPECT_EQ(Lit(IdKind::kSignedInteger, "-7"), "-7");
  EXPECT_EQ(Lit(IdKind::kSignedInteger, "9223372036854775807"),
            "9223372036854775807");
  EXPECT_EQ(Lit(IdKind::kSignedInteger, "-9223372036854775808"),
            "-9223372036854775808");
  for (const char* bad : {"", "07", "+7", "-0", " 7", "7 ", "1e3", "0x10", "-",
                          "9223372036854775808", "-9223372036854775809",
                          "0) OR (1=1", "7;", "7--", "18446744073709551615"}) {
    EXPECT_EQ(Code(IdKind::kSignedInteger, bad),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(SqlLiteralTest, UnsignedIntegersAreCanonicalDecimalsInRange) {
  EXPECT_EQ(Lit(IdKind::kUnsignedInteger, "18446744073709551615"),
            "18446744073709551615");
  EXPECT_EQ(Lit(IdKind::kUnsignedInteger, "0"), "0");
  for (const char* bad : {"-1", "-0", "18446744073709551616", "00", "1.0"}) {
    EXPECT_EQ(Code(IdKind::kUnsignedInteger, bad),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(SqlLiteralTest, BinaryIsAHexLiteralOfAnyBytes) {
  EXPECT_EQ(Lit(IdKind::kBinary, std::string("a\0'\\\xff", 5)),
            "X'6100275CFF'");
  EXPECT_EQ(Lit(IdKind::kBinary, ""), "X''");
}

TEST(SqlLiteralTest, TextIsAHexLiteralWithTheConnectionCharset) {
  EXPECT_EQ(Lit(IdKind::kText, "0) OR (1=1"),
            "_utf8mb4 X'3029204F522028313D31'");
  EXPECT_EQ(Lit(IdKind::kText, "a'b\\c"), "_utf8mb4 X'6127625C63'");
  EXPECT_EQ(Lit(IdKind::kText, "\xC3\xA9"), "_utf8mb4 X'C3A9'");
  EXPECT_EQ(Lit(IdKind::kText, "\xF0\x9F\x98\x80"), "_utf8mb4 X'F09F9880'");
  EXPECT_EQ(Lit(IdKind::kText, ""), "_utf8mb4 X''");
}

TEST(SqlLiteralTest, TextRejectsInvalidUtf8) {
  for (const std::string bad :
       {std::string("\xFF"), std::string("a\xC3"), std::string("\xC0\xAF"),
        std::string("\xED\xA0\x80"), std::string("\xF4\x90\x80\x80"),
        std::string("\xE0\x80\xAF"), std::string("\x80")}) {
    absl::Status s = IdLiteral(IdKind::kText, bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("text (UTF-8)"));
  }
}

TEST(SqlLiteralTest, ErrorLeavesOutputUnchangedAndQuotesTheIdEscaped) {
  std::string out = "IN (";
  absl::Status s = AppendIdLiteral(IdKind::kSignedInteger, "0) OR (1=1", &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out, "IN (");
  EXPECT_EQ(s.message(),
            "id \"0) OR (1=1\" (10 bytes) is not a valid id of an id column "
            "that is a signed integer");
  s = AppendIdLiteral(IdKind::kUnsignedInteger, std::string(100, '\n'), &out);
  EXPECT_THAT(s.message(), HasSubstr("\\n\"... (100 bytes)"));
  EXPECT_EQ(out, "IN (");
}

TEST(SqlLiteralTest, AppendAppends) {
  std::string out = "(";
  ASSERT_TRUE(AppendIdLiteral(IdKind::kText, "a", &out).ok());
  out += ",";
  ASSERT_TRUE(AppendIdLiteral(IdKind::kBinary, "b", &out).ok());
  EXPECT_EQ(out, "(_utf8mb4 X'61',X'62'");
}

}  // namespace
}  // namespace msgq
