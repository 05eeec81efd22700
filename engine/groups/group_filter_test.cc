#include "engine/groups/group_filter.h"

#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

Column Col(std::string name, std::string data_type, std::string column_type,
           std::string charset = "") {
  return Column{std::move(name), std::move(data_type), std::move(column_type),
                std::move(charset)};
}

// A message table with one column of each kind a filter meets.
std::vector<Column> Columns() {
  return {
      Col("id", "bigint", "bigint(20)"),
      Col("priority", "tinyint", "tinyint(4)"),
      Col("epoch", "bigint", "bigint(20)"),
      Col("time_next", "bigint", "bigint(20)"),
      Col("time_acked", "bigint", "bigint(20)"),
      Col("message", "json", "longtext", "utf8mb4"),
      Col("type", "varchar", "varchar(32)", "utf8mb4"),
      Col("Region", "char", "char(2)", "utf8mb4"),
      Col("kind", "enum", "enum('new','paid','it''s')", "utf8mb4"),
      Col("amount", "decimal", "decimal(10,2)"),
      Col("n", "int", "int(10) unsigned"),
      Col("code", "varbinary", "varbinary(4)"),
      Col("body", "text", "text", "utf8mb4"),
      Col("z", "int", "int(5) unsigned zerofill"),
      Col("f", "double", "double"),
      Col("my col", "varchar", "varchar(8)", "utf8mb4"),
      Col("Or", "varchar", "varchar(8)", "utf8mb4"),
  };
}

constexpr char kColumnList[] =
    "id, priority, type, Region, kind, amount, n, code, body, my col, Or";

absl::StatusOr<GroupFilter> Parse(absl::string_view text) {
  return ParseGroupFilter(text, Columns());
}

// The canonical form of `text`, or "ERROR: message".
std::string Canon(absl::string_view text) {
  absl::StatusOr<GroupFilter> f = Parse(text);
  if (!f.ok())
    return std::string("ERROR: ") + std::string(f.status().message());
  return f->ToString();
}

std::string Error(absl::string_view text) {
  absl::StatusOr<GroupFilter> f = Parse(text);
  if (f.ok()) return "OK: " + f->ToString();
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(f.status().message());
}

TEST(GroupFilterTest, EmptyOrBlankMeansEveryRow) {
  for (const char* text : {"", "   ", "\n\t "}) {
    absl::StatusOr<GroupFilter> f = Parse(text);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_TRUE(f->conditions.empty());
    EXPECT_EQ(f->ToString(), "");
  }
}

TEST(GroupFilterTest, EqualityAndInJoinedByAnd) {
  absl::StatusOr<GroupFilter> f =
      Parse("type IN ('order.created','order.paid') AND region = 'eu'");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->conditions.size(), 2u);
  EXPECT_EQ(f->conditions[0],
            (FilterCondition{"type", {"order.created", "order.paid"}, true}));
  EXPECT_EQ(f->conditions[1], (FilterCondition{"Region", {"eu"}, true}));
  EXPECT_EQ(f->ToString(),
            "type IN ('order.created', 'order.paid') AND Region = 'eu'");
}

TEST(GroupFilterTest, KeywordsAndNamesIgnoreCaseSpacingIsFree) {
  EXPECT_EQ(Canon("TYPE in('a')and REGION='eu'"),
            "type = 'a' AND Region = 'eu'");
  EXPECT_EQ(Canon("  type\n=\t'a'  "), "type = 'a'");
  EXPECT_EQ(Canon("`type` = 'a' aNd `my col` = 'b'"),
            "type = 'a' AND `my col` = 'b'");
  // A column named like a keyword is backquoted in the canonical form.
  EXPECT_EQ(Canon("`or` = 'x'"), "`Or` = 'x'");
  EXPECT_EQ(Canon("`my col` IN ('b', 'b', 'c')"), "`my col` IN ('b', 'c')");
}

TEST(GroupFilterTest, StringEscapes) {
  EXPECT_EQ(Canon(R"(type = 'it''s')"), R"(type = 'it\'s')");
  EXPECT_EQ(Canon(R"(type = 'it\'s')"), R"(type = 'it\'s')");
  EXPECT_EQ(Canon(R"(type = 'a\\b')"), R"(type = 'a\\b')");
  EXPECT_EQ(Canon(R"(type = 'say \"hi\"')"), R"(type = 'say "hi"')");
  EXPECT_EQ(Canon(R"(type = 'tab\there')"), R"(type = 'tab\there')");
  EXPECT_EQ(Canon(R"(type = 'nl\nx\ry')"), R"(type = 'nl\nx\ry')");
  EXPECT_EQ(Canon(R"(type = '\x\q')"), R"(type = 'xq')");
  // \% and \_ keep their backslash, as in MySQL.
  EXPECT_EQ(Canon(R"(type = '50\%\_')"), R"(type = '50\\%\\_')");
  absl::StatusOr<GroupFilter> nul = Parse(R"(type = 'a\0b')");
  ASSERT_TRUE(nul.ok()) << nul.status();
  EXPECT_EQ(nul->conditions[0].values[0], std::string("a\0b", 3));
  EXPECT_EQ(nul->ToString(), R"(type = 'a\0b')");
  EXPECT_EQ(Canon("type = ''"), "type = ''");
  EXPECT_EQ(Canon("type = 'caf\xc3\xa9'"), "type = 'caf\xc3\xa9'");
  EXPECT_EQ(Canon("type = 'a AND b = 1'"), "type = 'a AND b = 1'");
}

TEST(GroupFilterTest, UnterminatedAndWronglyQuoted) {
  EXPECT_EQ(Error("type = 'abc"),
            "filter: unterminated string starting at position 8");
  EXPECT_EQ(Error(R"(type = 'abc\')"),
            "filter: unterminated string starting at position 8");
  EXPECT_EQ(Error("type = 'abc\\"),
            "filter: unterminated string starting at position 8");
  EXPECT_EQ(Error("`type = 'a'"),
            "filter: unterminated `name` starting at position 1");
  EXPECT_EQ(Error("`` = 'a'"), "filter: empty column name at position 1");
  EXPECT_EQ(Error("type = \"eu\""),
            "filter: strings are single-quoted ('...'), found \" at "
            "position 8");
}

TEST(GroupFilterTest, UnknownColumnsListTheFilterableOnes) {
  EXPECT_EQ(
      Error("typ = 'a'"),
      std::string("filter: unknown column \"typ\"; columns: ") + kColumnList);
  EXPECT_EQ(Error("type = 'a' AND `my  col` = 'b'"),
            std::string("filter: unknown column \"my  col\"; columns: ") +
                kColumnList);
  EXPECT_EQ(Error("epoch = 1"),
            std::string("filter: column \"epoch\" is msgq's bookkeeping, not "
                        "the application's; columns: ") +
                kColumnList);
  EXPECT_EQ(Error("TIME_NEXT = 1"),
            std::string("filter: column \"time_next\" is msgq's bookkeeping, "
                        "not the application's; columns: ") +
                kColumnList);
}

TEST(GroupFilterTest, ColumnsOfOtherTypesAreRefused) {
  EXPECT_EQ(Error("message = '{}'"),
            "filter: column \"message\" is longtext, which filters do not "
            "compare; integer, decimal, char, varchar, text, enum, binary, "
            "varbinary and blob columns can be filtered");
  EXPECT_EQ(Error("f = 1"),
            "filter: column \"f\" is double, which filters do not compare; "
            "integer, decimal, char, varchar, text, enum, binary, varbinary "
            "and blob columns can be filtered");
  EXPECT_EQ(Error("z = 1"),
            "filter: column \"z\" is int(5) unsigned zerofill, whose text has "
            "leading zeros: filter on a column without ZEROFILL");
}

TEST(GroupFilterTest, EmptyInListsAndMissingParts) {
  EXPECT_EQ(Error("type IN ()"),
            "filter: empty IN list for column \"type\" at position 10: name "
            "at least one value");
  EXPECT_EQ(Error("type IN ('a',)"),
            "filter: expected a value at position 14, found )");
  EXPECT_EQ(Error("type IN ('a' 'b')"),
            "filter: expected , or ) at position 14, found 'b'");
  EXPECT_EQ(Error("type IN 'a'"),
            "filter: expected ( after IN at position 9, found 'a'");
  EXPECT_EQ(Error("type IN ('a'"),
            "filter: expected , or ) at position 13, found the end");
  EXPECT_EQ(Error("type ="),
            "filter: expected a value at position 7, found the end");
  EXPECT_EQ(Error("type"),
            "filter: expected = or IN after \"type\" at position 5, found the "
            "end");
  EXPECT_EQ(Error("= 'a'"),
            "filter: expected a column name at position 1, found =");
  EXPECT_EQ(Error("type = 'a' AND"),
            "filter: expected a column name at position 15, found the end");
  EXPECT_EQ(Error("type = 'a' AND AND n = 1"),
            "filter: expected a column name at position 16, found AND");
  EXPECT_EQ(Error("type = 'a' region = 'eu'"),
            "filter: expected AND or the end at position 12, found region");
  EXPECT_EQ(Error("(type = 'a')"),
            "filter: expected a column name at position 1, found (");
  EXPECT_EQ(Error("type = 'a';"),
            "filter: unexpected character ';' at position 11");
  EXPECT_EQ(Error("type = 'a' \xc3\xa9"),
            "filter: unexpected character '\\xc3\\xa9' at position 12");
}

TEST(GroupFilterTest, OnlyEqualityAndInCompare) {
  EXPECT_EQ(Error("type = 'a' OR type = 'b'"),
            "filter: OR at position 12 is not supported: conditions are "
            "joined by AND; for alternatives of one column use IN (...)");
  EXPECT_EQ(Error("type NOT IN ('a')"),
            "filter: NOT at position 6 is not supported: a filter selects "
            "rows with = and IN");
  EXPECT_EQ(Error("type <> 'a'"),
            "filter: only = and IN compare: found <> at position 6");
  EXPECT_EQ(Error("n >= 1"),
            "filter: only = and IN compare: found >= at position 3");
  EXPECT_EQ(Error("n != 1"),
            "filter: only = and IN compare: found != at position 3");
  EXPECT_EQ(Error("n <=> 1"),
            "filter: only = and IN compare: found <=> at position 3");
  EXPECT_EQ(Error("type LIKE 'a%'"),
            "filter: only = and IN compare: found LIKE at position 6");
  EXPECT_EQ(Error("type IS NULL"),
            "filter: only = and IN compare: found IS at position 6");
  EXPECT_EQ(Error("type = NULL"),
            "filter: NULL at position 8 matches no row: compare \"type\" "
            "with values");
  EXPECT_EQ(Error("n = true"),
            "filter: TRUE at position 5 is not a value here: write 1 or 0");
  EXPECT_EQ(Error("type = created"),
            "filter: expected a value at position 8, found created: quote "
            "strings ('created')");
  EXPECT_EQ(Error("type = `created`"),
            "filter: expected a value at position 8, found `created`");
}

TEST(GroupFilterTest, ColumnsAppearOnce) {
  EXPECT_EQ(Error("type = 'a' AND TYPE = 'b'"),
            "filter: column \"type\" appears twice; put its values in one IN "
            "list");
}

TEST(GroupFilterTest, IntegersAreCheckedAgainstTheirType) {
  EXPECT_EQ(Canon("priority IN (007, -128, 127, -0)"),
            "priority IN (7, -128, 127, 0)");
  EXPECT_EQ(Error("priority = 128"),
            "filter: column \"priority\" is tinyint(4): 128 is out of range "
            "(-128 to 127)");
  EXPECT_EQ(Error("priority = -129"),
            "filter: column \"priority\" is tinyint(4): -129 is out of range "
            "(-128 to 127)");
  EXPECT_EQ(Canon("n IN (0, 4294967295, -0)"), "n IN (0, 4294967295)");
  EXPECT_EQ(Error("n = 4294967296"),
            "filter: column \"n\" is int(10) unsigned: 4294967296 is out of "
            "range (0 to 4294967295)");
  EXPECT_EQ(Error("n = -1"),
            "filter: column \"n\" is int(10) unsigned: -1 is out of range (0 "
            "to 4294967295)");
  EXPECT_EQ(Canon("id = -9223372036854775808"), "id = -9223372036854775808");
  EXPECT_EQ(Error("id = 9223372036854775808"),
            "filter: column \"id\" is bigint(20): 9223372036854775808 is out "
            "of range (-9223372036854775808 to 9223372036854775807)");
  EXPECT_EQ(Error("id = 99999999999999999999999999"),
            "filter: column \"id\" is bigint(20): 99999999999999999999999999 "
            "is out of range (-9223372036854775808 to 9223372036854775807)");
  EXPECT_EQ(Error("id = 1.5"),
            "filter: column \"id\" is bigint(20): 1.5 is not an integer");
  EXPECT_EQ(Error("id = '5'"),
            "filter: column \"id\" is bigint(20): '5' is a string; write "
            "integers without quotes");
  EXPECT_EQ(Error("id = 1e3"),
            "filter: malformed number \"1e3\" at position 6");
  EXPECT_EQ(Error("id = 12abc"),
            "filter: malformed number \"12abc\" at position 6");
  EXPECT_EQ(Error("id = 1."), "filter: malformed number \"1.\" at position 6");
  EXPECT_EQ(Error("id = 1.2.3"),
            "filter: malformed number \"1.2.3\" at position 6");
  EXPECT_EQ(Error("id = - 1"),
            "filter: unexpected character '-' at position 6");
  EXPECT_EQ(Error("id = +1"), "filter: unexpected character '+' at position 6");
}

TEST(GroupFilterTest, DecimalsTakeTheColumnsScale) {
  EXPECT_EQ(Canon("amount IN (1.5, 0001.50, 2, -0.00, 0, 12345678.99, -3.1)"),
            "amount IN (1.50, 2.00, 0.00, 12345678.99, -3.10)");
  EXPECT_EQ(Error("amount = 1.234"),
            "filter: column \"amount\" is decimal(10,2): 1.234 has more than "
            "2 decimals");
  EXPECT_EQ(Canon("amount = 1.230"), "amount = 1.23");
  EXPECT_EQ(Error("amount = 123456789"),
            "filter: column \"amount\" is decimal(10,2): 123456789 has more "
            "than 8 digits before the point");
  EXPECT_EQ(Error("amount = '1.5'"),
            "filter: column \"amount\" is decimal(10,2): '1.5' is a string; "
            "write numbers without quotes");
}

TEST(GroupFilterTest, StringsAreCheckedAgainstTheirType) {
  EXPECT_EQ(Error("type = 5"),
            "filter: column \"type\" is varchar(32): write 5 as a string "
            "('5')");
  EXPECT_EQ(Error("region = 'eur'"),
            "filter: column \"Region\" is char(2): 'eur' is 3 characters; at "
            "most 2");
  EXPECT_EQ(Canon("region = '\xc3\xa9\xc3\xa9'"),
            "Region = '\xc3\xa9\xc3\xa9'");
  EXPECT_EQ(Canon("code = 'abcd'"), "code = 'abcd'");
  EXPECT_EQ(Error("code = '\xc3\xa9\xc3\xa9\xc3\xa9'"),
            "filter: column \"code\" is varbinary(4): "
            "'\\xc3\\xa9\\xc3\\xa9\\xc3\\xa9' is 6 bytes; at most 4");
  EXPECT_EQ(Canon("body = 'anything at all'"), "body = 'anything at all'");
}

TEST(GroupFilterTest, EnumsTakeTheirValues) {
  EXPECT_EQ(Canon("kind IN ('new', 'PAID', 'it''s')"),
            "kind IN ('new', 'paid', 'it\\'s')");
  EXPECT_EQ(Error("kind = 'old'"),
            "filter: column \"kind\" is enum('new','paid','it''s'): 'old' is "
            "not one of its values");
  EXPECT_EQ(Error("kind = 1"),
            "filter: column \"kind\" is enum('new','paid','it''s'): write 1 "
            "as a string ('1')");
}

TEST(GroupFilterTest, LengthIsBounded) {
  std::string text = "type IN ('a'";
  while (text.size() < kMaxFilterLength - 10) text += ", 'a'";
  text += ")";
  EXPECT_TRUE(Parse(text).ok());
  const std::string long_one =
      "type = '" + std::string(kMaxFilterLength, 'a') + "'";
  EXPECT_EQ(Error(long_one), "filter: the filter is 4105 bytes; at most 4096");
}

// Random texts made of the grammar's pieces and some junk: the parser
// never crashes, errors are INVALID_ARGUMENT starting "filter: ", and a
// filter it accepts parses again, from its canonical text, to itself.
TEST(GroupFilterTest, RandomTextsParseToAFixedPoint) {
  const std::vector<std::string> pieces = {
      "type",    "TYPE",   "`type`",   "region",     "`my col`", "kind",
      "amount",  "n",      "priority", "id",         "code",     "body",
      "typ",     "epoch",  "message",  "`or`",       "=",        "IN",
      "in",      "(",      ")",        ",",          "AND",      "and",
      "OR",      "NOT",    "NULL",     "'a'",        "'eu'",     "'it''s'",
      "'x\\'y'", "'\\\\'", "'\\0'",    "''",         "'new'",    "'paid'",
      "1",       "-1",     "007",      "1.5",        "-0.25",    "300",
      "1e5",     "<>",     "'",        "`",          "\"",       ";",
      " ",       "\t",     "\xc3\xa9", "'\xc3\xa9'", "\\"};
  std::mt19937 rng(20261207);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) {
      text += pieces[rng() % pieces.size()];
      if (rng() % 2 == 0) text += " ";
    }
    absl::StatusOr<GroupFilter> f = Parse(text);
    if (!f.ok()) {
      ASSERT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
      ASSERT_THAT(std::string(f.status().message()),
                  ::testing::StartsWith("filter: "))
          << text;
      continue;
    }
    ++accepted;
    absl::StatusOr<GroupFilter> again = Parse(f->ToString());
    ASSERT_TRUE(again.ok())
        << text << " -> " << f->ToString() << ": " << again.status();
    ASSERT_EQ(*again, *f) << text << " -> " << f->ToString();
  }
  // The pieces make valid filters often enough for the check to mean
  // something.
  EXPECT_GT(accepted, 200);
}

TEST(GroupFilterTest, StructuredRandomFiltersRoundTrip) {
  std::mt19937 rng(7);
  const std::vector<std::string> text_values = {
      "a",     "it's", "back\\slash", std::string("nul\0x", 5),
      "tab\t", "nl\n", "\xc3\xa9",    "",
      "`",     "AND",  "'",           "\"",
      "%_"};
  for (int i = 0; i < 2000; ++i) {
    // type IN (random strings) AND n = random
    std::string text = "type IN (";
    std::vector<std::string> expected;
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < count; ++k) {
      const std::string& v = text_values[rng() % text_values.size()];
      if (k > 0) text += ",";
      text += "'";
      for (char c : v) {
        if (c == '\'') {
          text += "''";
        } else if (c == '\\') {
          text += "\\\\";
        } else if (c == '\0') {
          text += "\\0";
        } else {
          text += c;
        }
      }
      text += "'";
      if (std::find(expected.begin(), expected.end(), v) == expected.end()) {
        expected.push_back(v);
      }
    }
    const uint32_t n = rng();
    text += ") AND n = " + std::to_string(n);
    absl::StatusOr<GroupFilter> f = Parse(text);
    ASSERT_TRUE(f.ok()) << text << ": " << f.status();
    ASSERT_EQ(f->conditions.size(), 2u);
    EXPECT_EQ(f->conditions[0].values, expected) << text;
    EXPECT_EQ(f->conditions[1].values,
              std::vector<std::string>{std::to_string(n)});
    absl::StatusOr<GroupFilter> again = Parse(f->ToString());
    ASSERT_TRUE(again.ok()) << f->ToString() << ": " << again.status();
    EXPECT_EQ(*again, *f);
  }
}

// Rows packed as a table streams them: id, message, type, amount.
TEST(RowFilterTest, MatchesTheStreamedColumnsTextByteForByte) {
  const std::vector<Column> streamed = {
      Col("id", "bigint", "bigint(20)"),
      Col("message", "json", "longtext", "utf8mb4"),
      Col("type", "varchar", "varchar(32)", "utf8mb4"),
      Col("amount", "decimal", "decimal(10,2)")};
  absl::StatusOr<GroupFilter> parsed = ParseGroupFilter(
      "type IN ('order.created', 'order.paid') AND amount = 3.5", Columns());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<RowFilter> filter = RowFilter::Bind(*parsed, streamed);
  ASSERT_TRUE(filter.ok()) << filter.status();
  auto row = [](std::vector<std::optional<std::string>> values) {
    std::pair<std::vector<int64_t>, std::string> packed;
    for (const auto& v : values) {
      packed.first.push_back(v.has_value() ? static_cast<int64_t>(v->size())
                                           : -1);
      if (v.has_value()) packed.second += *v;
    }
    return packed;
  };
  auto matches = [&](std::vector<std::optional<std::string>> values) {
    const auto [lengths, text] = row(std::move(values));
    return filter->Matches(lengths, text);
  };
  EXPECT_TRUE(matches({"1", "{}", "order.paid", "3.50"}));
  EXPECT_TRUE(matches({"2", std::nullopt, "order.created", "3.50"}));
  EXPECT_FALSE(matches({"3", "{}", "order.shipped", "3.50"}));
  EXPECT_FALSE(matches({"4", "{}", "order.paid", "3.51"}));
  EXPECT_FALSE(matches({"5", "{}", "ORDER.PAID", "3.50"}));
  EXPECT_FALSE(matches({"6", "{}", std::nullopt, "3.50"}));
  EXPECT_FALSE(matches({"7", "{}", "order.paid"}));  // a column short

  // No conditions: every row.
  absl::StatusOr<RowFilter> all = RowFilter::Bind(GroupFilter{}, streamed);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->Matches({1}, "9"));
}

TEST(RowFilterTest, AColumnTheTableDoesNotStreamIsRefused) {
  absl::StatusOr<GroupFilter> parsed = ParseGroupFilter("n = 7", Columns());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<RowFilter> filter =
      RowFilter::Bind(*parsed, {Col("id", "bigint", "bigint(20)")});
  EXPECT_EQ(filter.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(filter.status().message(),
            "filter: column \"n\" is not streamed by the table");
}

}  // namespace
}  // namespace msgq
