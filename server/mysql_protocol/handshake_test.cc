#include "server/mysql_protocol/handshake.h"

#include <string>

#include "gtest/gtest.h"
#include "server/mysql_protocol/packet.h"

namespace msgq::mysql_protocol {
namespace {

using namespace std::string_literals;

constexpr char kScramble[] = "abcdefghijklmnopqrst";

TEST(HandshakeTest, HandshakeV10ExactBytes) {
  const std::string p = HandshakePayload(7, kScramble);
  const std::string want =
      "\x0a"
      "8.0.30-msgq\0"
      "\x07\x00\x00\x00"
      "abcdefgh\0"
      "\x0d\xa2"  // capabilities, low: 0xa20d
      "\x2d"      // utf8mb4_general_ci
      "\x02\x00"  // autocommit
      "\x38\x00"  // capabilities, high: 0x0038
      "\x15"      // 21 bytes of scramble (with NUL)
      "\0\0\0\0\0\0\0\0\0\0"
      "ijklmnopqrst\0"
      "mysql_native_password\0"s;
  EXPECT_EQ(p, want);
}

TEST(HandshakeTest, MakeScrambleIsPrintableWithoutNul) {
  const std::string s = MakeScramble(std::string(20, '\0') + "tail");
  ASSERT_EQ(s.size(), kScrambleBytes);
  for (char c : s) EXPECT_GE(c, 0x21);
  const std::string t = MakeScramble(std::string(20, '\xff'));
  for (char c : t) EXPECT_LE(c, 0x7e);
}

TEST(NativePasswordTest, KnownVector) {
  // Python: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
  const std::string want =
      "\x88\x17\xc5\x0f\xa7\x79\xda\xef\x01\x0e\xe7\x57\x78\x25\xb0\x84\x7d"
      "\xf9\x84\x2e"s;
  EXPECT_EQ(NativePasswordResponse(kScramble, "secret"), want);
  EXPECT_TRUE(CheckNativePassword(kScramble, "secret", want));
  EXPECT_FALSE(CheckNativePassword(kScramble, "Secret", want));
  EXPECT_FALSE(CheckNativePassword(kScramble, "secret", ""));
  EXPECT_FALSE(CheckNativePassword(kScramble, "secret", want.substr(1)));
  EXPECT_TRUE(CheckNativePassword(kScramble, "", ""));
  EXPECT_FALSE(CheckNativePassword(kScramble, "", want));
}

std::string Response(uint32_t caps, const std::string& tail) {
  std::string out;
  AppendInt4(out, caps);
  AppendInt4(out, 1 << 24);
  AppendInt1(out, 45);
  out.append(23, '\0');
  return out + tail;
}

TEST(HandshakeResponseTest, ParsesLenEncAuthDatabaseAndPlugin) {
  const uint32_t caps = kClientProtocol41 | kClientSecureConnection |
                        kClientPluginAuth | kClientPluginAuthLenencData |
                        kClientConnectWithDb;
  auto r = ParseHandshakeResponse(
      Response(caps, "bob\0\x03xyzmsgq\0mysql_native_password\0"s));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->user, "bob");
  EXPECT_EQ(r->auth_response, "xyz");
  EXPECT_EQ(r->database, "msgq");
  EXPECT_EQ(r->auth_plugin, "mysql_native_password");
}

TEST(HandshakeResponseTest, ParsesOneByteAuthLengthAndPluginWithoutNul) {
  const uint32_t caps =
      kClientProtocol41 | kClientSecureConnection | kClientPluginAuth;
  auto r = ParseHandshakeResponse(Response(caps, "al\0\x02xycaching"s));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->user, "al");
  EXPECT_EQ(r->auth_response, "xy");
  EXPECT_EQ(r->database, "");
  EXPECT_EQ(r->auth_plugin, "caching");
}

TEST(HandshakeResponseTest, RejectsOldTlsAndTruncated) {
  EXPECT_EQ(ParseHandshakeResponse(Response(0, "bob\0\0"s)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // An SSLRequest: no user name.
  EXPECT_EQ(ParseHandshakeResponse(Response(kClientProtocol41 | kClientSsl, ""))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHandshakeResponse("\x00\x02"s).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHandshakeResponse(Response(kClientProtocol41, "bob"))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ParseHandshakeResponse(
          Response(kClientProtocol41 | kClientSecureConnection, "bob\0\x09xy"s))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(HandshakeTest, AuthSwitchExactBytes) {
  EXPECT_EQ(AuthSwitchPayload(kScramble),
            "\xfemysql_native_password\0abcdefghijklmnopqrst\0"s);
}

TEST(HandshakeTest, SslRequestAndTlsCapability) {
  const std::string ssl = Response(kClientProtocol41 | kClientSsl, "");
  ASSERT_EQ(ssl.size(), 32u);
  EXPECT_TRUE(IsSslRequest(ssl));
  EXPECT_FALSE(IsSslRequest(Response(kClientProtocol41, "")));
  EXPECT_FALSE(
      IsSslRequest(Response(kClientProtocol41 | kClientSsl, "bob\0\0"s)));
  EXPECT_FALSE(IsSslRequest(""));
  // Inside TLS the full response still carries CLIENT_SSL.
  absl::StatusOr<HandshakeResponse> r = ParseHandshakeResponse(Response(
      kClientProtocol41 | kClientSsl | kClientSecureConnection, "bob\0\0"s));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->user, "bob");
  // The low capability bytes: 0xa20d | CLIENT_SSL.
  EXPECT_EQ(HandshakePayload(7, kScramble, kServerCapabilities | kClientSsl)
                .substr(26, 2),
            "\x0d\xaa"s);
}

TEST(HandshakeTest, ClearPasswordSwitchAndAnswer) {
  EXPECT_EQ(ClearPasswordSwitchPayload(), "\xfemysql_clear_password\0"s);
  EXPECT_EQ(ClearPassword("tok-1\0"s), "tok-1");
  EXPECT_EQ(ClearPassword("tok-1"), "tok-1");
  EXPECT_EQ(ClearPassword("\0"s), "");
  EXPECT_EQ(ClearPassword(""), "");
}

}  // namespace
}  // namespace msgq::mysql_protocol
