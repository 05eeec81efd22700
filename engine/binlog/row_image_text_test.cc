// AppendText: the text forms built from row-image values, each against
// bytes laid out by hand from the ROW format's documented encodings (the
// property test tests/binlog_image_property_test.cc compares them with a
// real MariaDB's SELECT for many random values).
#include "engine/binlog/row_image_text.h"

#include <string>

#include "absl/strings/escaping.h"
#include "engine/binlog/binlog_row_format.h"
#include "gtest/gtest.h"

namespace msgq::binlog {
namespace {

// The text of `hex` bytes, or "<refused>".
std::string Text(TextForm form, uint8_t type, uint16_t meta,
                 const std::string& hex, uint64_t integer = 0) {
  std::string out = "kept:";
  if (!AppendText(form, type, meta, absl::HexStringToBytes(hex), integer,
                  &out)) {
    return out == "kept:" ? "<refused>" : "<refused, appended>";
  }
  return out.substr(5);
}

TEST(RowImageTextTest, IntegersBySignednessAndWidth) {
  EXPECT_EQ(Text(TextForm::kSigned, kTiny, 0, "", 0xff), "-1");
  EXPECT_EQ(Text(TextForm::kUnsigned, kTiny, 0, "", 0xff), "255");
  EXPECT_EQ(Text(TextForm::kSigned, kShort, 0, "", 0x8000), "-32768");
  EXPECT_EQ(Text(TextForm::kSigned, kInt24, 0, "", 0x7fffff), "8388607");
  EXPECT_EQ(Text(TextForm::kSigned, kInt24, 0, "", 0x800000), "-8388608");
  EXPECT_EQ(Text(TextForm::kSigned, kLong, 0, "", 0xfffffffe), "-2");
  EXPECT_EQ(Text(TextForm::kSigned, kLongLong, 0, "", 0x8000000000000000),
            "-9223372036854775808");
  EXPECT_EQ(Text(TextForm::kUnsigned, kLongLong, 0, "", ~uint64_t{0}),
            "18446744073709551615");
}

TEST(RowImageTextTest, BytesAreCopiedAsStored) {
  EXPECT_EQ(Text(TextForm::kBytes, kVarchar, 80, "00ff41f09f9880"),
            std::string("\0\xff"
                        "A\xf0\x9f\x98\x80",
                        7));
  EXPECT_EQ(Text(TextForm::kBytes, kBlob, 4, ""), "");
}

TEST(RowImageTextTest, DecimalsKeepTheirScale) {
  // DECIMAL(10,2): 8 integer digits in 4 bytes, 2 fraction digits in 1.
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (10 << 8) | 2, "800004d238"),
            "1234.56");
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (10 << 8) | 2, "7ffffb2dc7"),
            "-1234.56");
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (10 << 8) | 2, "8000000000"),
            "0.00");
  // DECIMAL(5,5) and DECIMAL(1,0).
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (5 << 8) | 5, "80c350"),
            "0.50000");
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (1 << 8) | 0, "87"), "7");
  // DECIMAL(18,9): 9 integer digits in one word, 9 fraction digits in one.
  EXPECT_EQ(
      Text(TextForm::kDecimal, kNewDecimal, (18 << 8) | 9, "bb9ac9ff00000001"),
      "999999999.000000001");
  // A group above its digits, or the wrong size, is not a value.
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (1 << 8) | 0, "8a"),
            "<refused>");
  EXPECT_EQ(Text(TextForm::kDecimal, kNewDecimal, (10 << 8) | 2, "800004d2"),
            "<refused>");
}

TEST(RowImageTextTest, DatesAndTimes) {
  EXPECT_EQ(Text(TextForm::kDate, kNewDate, 0, "79d50f"), "2026-11-25");
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime2, 0, "99bb72db47"),
            "2026-11-25 13:45:07");
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime2, 0, "8cb2420000"),
            "1000-01-01 00:00:00");
  // DATETIME(6) and (3): the fraction in 3 and 2 bytes.
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime2, 6, "fef3ff7efb0f423f"),
            "9999-12-31 23:59:59.999999");
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime2, 3, "99bb72db4704ce"),
            "2026-11-25 13:45:07.123");
  // DATETIME(1): one byte of hundredths, one digit shown.
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime2, 1, "99bb72db4732"),
            "2026-11-25 13:45:07.5");
  EXPECT_EQ(Text(TextForm::kTime, kTime2, 0, "b46efb"), "838:59:59");
  EXPECT_EQ(Text(TextForm::kTime, kTime2, 0, "7ff000"), "-01:00:00");
  EXPECT_EQ(Text(TextForm::kTime, kTime2, 0, "800000"), "00:00:00");
  EXPECT_EQ(Text(TextForm::kYear, kYear, 0, "7e"), "2026");
  EXPECT_EQ(Text(TextForm::kYear, kYear, 0, "00"), "0000");
}

// A binlog type that does not carry the form (an ALTER since the schema
// was read) or a form that is not reproducible: refused, nothing appended.
TEST(RowImageTextTest, MismatchesAreRefusedWithoutAppending) {
  EXPECT_EQ(Text(TextForm::kNone, kVarchar, 80, "41"), "<refused>");
  EXPECT_EQ(Text(TextForm::kSigned, kVarchar, 80, "41"), "<refused>");
  EXPECT_EQ(Text(TextForm::kBytes, kLong, 0, "", 7), "<refused>");
  EXPECT_EQ(Text(TextForm::kBytes, kString, 0xfe14, "41"), "<refused>");
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime, 0, "99bb72db47"), "<refused>");
  EXPECT_EQ(Text(TextForm::kDateTime, kDateTime2, 0, "99bb72db"), "<refused>");
  EXPECT_EQ(Text(TextForm::kTime, kTime2, 2, "800000"), "<refused>");
  EXPECT_EQ(Text(TextForm::kDecimal, kDouble, 8, "0000000000000000"),
            "<refused>");
}

}  // namespace
}  // namespace msgq::binlog
