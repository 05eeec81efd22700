#include "server/mysql_protocol/packet.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq::mysql_protocol {
namespace {

using namespace std::string_literals;

TEST(LenEncIntTest, EncodesEachWidthExactly) {
  std::string out;
  AppendLenEncInt(out, 0);
  AppendLenEncInt(out, 250);
  AppendLenEncInt(out, 251);
  AppendLenEncInt(out, 0xFFFF);
  AppendLenEncInt(out, 0x10000);
  AppendLenEncInt(out, 0x1000000);
  EXPECT_EQ(out,
            "\x00\xFA"
            "\xFC\xFB\x00"
            "\xFC\xFF\xFF"
            "\xFD\x00\x00\x01"
            "\xFE\x00\x00\x00\x01\x00\x00\x00\x00"s);
}

TEST(LenEncIntTest, RoundTrips) {
  for (uint64_t v : {0ull, 1ull, 250ull, 251ull, 65535ull, 65536ull,
                     16777215ull, 16777216ull, ~0ull}) {
    std::string out;
    AppendLenEncInt(out, v);
    PayloadReader r(out);
    uint64_t back = 0;
    ASSERT_TRUE(r.ReadLenEncInt(back)) << v;
    EXPECT_EQ(back, v);
    EXPECT_TRUE(r.empty());
  }
}

TEST(LenEncIntTest, RejectsNullAndErrMarkersAndTruncation) {
  uint64_t v = 0;
  EXPECT_FALSE(PayloadReader("\xFB"s).ReadLenEncInt(v));
  EXPECT_FALSE(PayloadReader("\xFF"s).ReadLenEncInt(v));
  EXPECT_FALSE(PayloadReader("\xFC\x01"s).ReadLenEncInt(v));
  EXPECT_FALSE(PayloadReader(""s).ReadLenEncInt(v));
}

TEST(LenEncStringTest, RoundTripsAndRejectsOverrun) {
  std::string out;
  AppendLenEncString(out, "abc");
  EXPECT_EQ(out,
            "\x03"
            "abc"s);
  absl::string_view s;
  EXPECT_TRUE(PayloadReader(out).ReadLenEncString(s));
  EXPECT_EQ(s, "abc");
  EXPECT_FALSE(PayloadReader("\x05"
                             "abc"s)
                   .ReadLenEncString(s));
  // A huge announced length does not wrap around.
  EXPECT_FALSE(PayloadReader("\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
                             "a"s)
                   .ReadLenEncString(s));
}

TEST(FrameTest, HeaderIsLengthThenSequence) {
  uint8_t seq = 7;
  EXPECT_EQ(Frame(seq, "\x0e"s), "\x01\x00\x00\x07\x0e"s);
  EXPECT_EQ(seq, 8);
  seq = 255;
  EXPECT_EQ(Frame(seq, ""), "\x00\x00\x00\xFF"s);
  EXPECT_EQ(seq, 0);  // wraps
}

TEST(FrameTest, SplitsPayloadsOf16MiB) {
  uint8_t seq = 0;
  const std::string payload(kMaxPayloadPerPacket, 'x');
  const std::string framed = Frame(seq, payload);
  EXPECT_EQ(seq, 2);
  ASSERT_EQ(framed.size(), payload.size() + 2 * kHeaderBytes);
  EXPECT_EQ(framed.substr(0, 4), "\xFF\xFF\xFF\x00"s);
  EXPECT_EQ(framed.substr(framed.size() - 4), "\x00\x00\x00\x01"s);
}

TEST(ParsePacketTest, WaitsForTheWholePacket) {
  size_t consumed = 99;
  auto p = ParsePacket("\x03\x00\x00"s, 100, &consumed);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_value());
  p = ParsePacket(
      "\x03\x00\x00\x00"
      "ab"s,
      100, &consumed);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_value());
  EXPECT_EQ(consumed, 0u);
  p = ParsePacket(
      "\x03\x00\x00\x02"
      "abcNEXT"s,
      100, &consumed);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->seq, 2);
  EXPECT_EQ((*p)->payload, "abc");
  EXPECT_EQ(consumed, 7u);
}

TEST(ParsePacketTest, RefusesContinuedAndOversizedPackets) {
  size_t consumed = 0;
  auto p =
      ParsePacket("\xFF\xFF\xFF\x00"s, kMaxPayloadPerPacket + 1, &consumed);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  p = ParsePacket("\x65\x00\x00\x00"s, 100, &consumed);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  p = ParsePacket("\x64\x00\x00\x00"s, 100, &consumed);
  ASSERT_TRUE(p.ok());
}

TEST(GenericPacketsTest, ExactBytes) {
  EXPECT_EQ(OkPayload(), "\x00\x00\x00\x02\x00\x00\x00"s);
  EXPECT_EQ(EofPayload(), "\xFE\x00\x00\x02\x00"s);
  EXPECT_EQ(ErrPayload(1146, "42S02", "no"), "\xFF\x7A\x04#42S02no"s);
}

TEST(PayloadReaderTest, NulStringNeedsItsNul) {
  absl::string_view s;
  const std::string payload = "ab\0cd"s;
  PayloadReader r(payload);
  ASSERT_TRUE(r.ReadNulString(s));
  EXPECT_EQ(s, "ab");
  EXPECT_FALSE(r.ReadNulString(s));
  EXPECT_TRUE(r.empty());
}

}  // namespace
}  // namespace msgq::mysql_protocol
