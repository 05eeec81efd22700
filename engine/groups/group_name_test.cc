#include "engine/groups/group_name.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(GroupNameTest, AcceptsLettersDigitsUnderscoreAndDash) {
  for (const char* name : {"billing", "B", "7", "search-v2", "a_b", "A9-_z"}) {
    EXPECT_TRUE(ValidateGroupName(name).ok()) << name;
  }
  EXPECT_TRUE(ValidateGroupName(std::string(64, 'g')).ok());
}

TEST(GroupNameTest, EmptyIsRefused) {
  absl::Status s = ValidateGroupName("");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "group name is empty");
}

TEST(GroupNameTest, LongerThan64IsRefusedWithItsLength) {
  absl::Status s = ValidateGroupName(std::string(65, 'g'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "group name \"" + std::string(64, 'g') +
                             "... (65 bytes)\" is 65 characters; at most 64");
}

TEST(GroupNameTest, OtherCharactersAreNamedWithTheirPosition) {
  absl::Status s = ValidateGroupName("bil ling");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "group name \"bil ling\" has ' ' at position 4; a group name is "
            "letters, digits, '_' and '-', starting with a letter or a digit");
  EXPECT_EQ(ValidateGroupName("-x").message(),
            "group name \"-x\" has '-' at position 1; a group name is "
            "letters, digits, '_' and '-', starting with a letter or a digit");
  EXPECT_EQ(ValidateGroupName("_x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateGroupName("a.b").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateGroupName("caf\xc3\xa9").message(),
            "group name \"caf\\xc3\\xa9\" has '\\xc3' at position 4; a group "
            "name is letters, digits, '_' and '-', starting with a letter or "
            "a digit");
  EXPECT_EQ(
      ValidateGroupName(std::string("a\0b", 3)).message(),
      "group name \"a\\x00\\x62\" has '\\x00' at position 2; a group name "
      "is letters, digits, '_' and '-', starting with a letter or a "
      "digit");
}

}  // namespace
}  // namespace msgq
