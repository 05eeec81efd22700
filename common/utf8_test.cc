#include "common/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(Utf8Test, SequenceLengthOfEachForm) {
  EXPECT_EQ(Utf8SequenceLength(""), 0u);
  EXPECT_EQ(Utf8SequenceLength("a"), 1u);
  EXPECT_EQ(Utf8SequenceLength(std::string("\0x", 2)), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9!"), 2u);          // é
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC"), 3u);       // €
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98\x80z"), 4u);  // U+1F600
  EXPECT_EQ(Utf8SequenceLength("\xEF\xBF\xBE"), 3u);       // U+FFFE
  EXPECT_EQ(Utf8SequenceLength("\xF4\x8F\xBF\xBF"), 4u);   // U+10FFFF
}

TEST(Utf8Test, IllFormedSequencesAreRejected) {
  EXPECT_EQ(Utf8SequenceLength("\x80"), 0u);              // continuation
  EXPECT_EQ(Utf8SequenceLength("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(Utf8SequenceLength("\xE0\x80\xAF"), 0u);      // overlong '/'
  EXPECT_EQ(Utf8SequenceLength("\xED\xA0\x80"), 0u);      // U+D800
  EXPECT_EQ(Utf8SequenceLength("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82"), 0u);          // truncated
  EXPECT_EQ(Utf8SequenceLength("\xC3("), 0u);             // bad continuation
  EXPECT_EQ(Utf8SequenceLength("\xFF"), 0u);
}

TEST(Utf8Test, WholeStrings) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("caf\xC3"));
  EXPECT_FALSE(
      IsValidUtf8("a\xED\xBF\xBF"
                  "b"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));
}

}  // namespace
}  // namespace msgq
