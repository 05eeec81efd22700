#include "server/auth/token_file.h"

#include "gtest/gtest.h"

namespace msgq::auth {
namespace {

std::string Hex(const Digest& d) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

TEST(Sha256Test, KnownVector) {
  EXPECT_EQ(Hex(Sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TokenTableTest, FindsThePrincipalOfAToken) {
  const std::string text = "# tokens\n" + Hex(Sha256("secret-1")) +
                           "  billing   # a comment\n\n\t" +
                           Hex(Sha256("secret-2")) + "\tops\n";
  absl::StatusOr<TokenTable> t = TokenTable::Parse(text, "tokens");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->entries().size(), 2u);
  EXPECT_EQ(t->entries()[0].principal, "billing");
  EXPECT_EQ(t->entries()[1].principal, "ops");
  EXPECT_EQ(t->Find("secret-1"), "billing");
  EXPECT_EQ(t->Find("secret-2"), "ops");
  EXPECT_EQ(t->Find("secret-3"), std::nullopt);
  EXPECT_EQ(t->Find(""), std::nullopt);
  // The digest itself is not a token.
  EXPECT_EQ(t->Find(Hex(Sha256("secret-1"))), std::nullopt);
}

TEST(TokenTableTest, UppercaseHexIsAccepted) {
  std::string hex = Hex(Sha256("x"));
  for (char& c : hex) c = static_cast<char>(toupper(c));
  absl::StatusOr<TokenTable> t = TokenTable::Parse(hex + " p\n", "tokens");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Find("x"), "p");
}

void ExpectError(absl::string_view text, absl::string_view message) {
  absl::StatusOr<TokenTable> t = TokenTable::Parse(text, "/etc/msgq/tokens");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), message);
}

TEST(TokenTableTest, ErrorsNameFileAndLineButNotTheLine) {
  const std::string d = Hex(Sha256("a"));
  ExpectError("\n" + d + "\n",
              "/etc/msgq/tokens:2: expected 'sha256-hex principal', got 1 "
              "fields");
  ExpectError(d + " a b\n",
              "/etc/msgq/tokens:1: expected 'sha256-hex principal', got 3 "
              "fields");
  const std::string not_hex =
      ": the first field must be the token's SHA-256 as 64 hex digits "
      "(printf %s \"$TOKEN\" | sha256sum), not the token itself";
  ExpectError("my-plain-token billing\n", "/etc/msgq/tokens:1" + not_hex);
  ExpectError(d.substr(1) + "g billing\n", "/etc/msgq/tokens:1" + not_hex);
  ExpectError(d + "0 billing\n", "/etc/msgq/tokens:1" + not_hex);
  ExpectError(d + " *\n",
              "/etc/msgq/tokens:1: a principal may not contain '*' or '?' "
              "(policy globs)");
  ExpectError(d + " a\n# x\n" + d + " b\n",
              "/etc/msgq/tokens:3: this digest is listed twice");
}

}  // namespace
}  // namespace msgq::auth
