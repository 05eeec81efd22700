#include "server/grpc_front/h2_frame_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::grpc_front {
namespace {

std::string Frame(uint32_t length, uint8_t type, uint8_t flags,
                  uint32_t stream) {
  std::string f;
  f.push_back(static_cast<char>(length >> 16));
  f.push_back(static_cast<char>(length >> 8));
  f.push_back(static_cast<char>(length));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int i = 0; i < 4; ++i)
    f.push_back(static_cast<char>(stream >> (24 - 8 * i)));
  f.append(length, 'x');
  return f;
}

struct Seen {
  uint8_t type;
  uint32_t stream;
  uint32_t length;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> FeedInPieces(H2FrameReader& reader, const std::string& bytes,
                               size_t piece) {
  std::vector<Seen> seen;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    EXPECT_TRUE(reader
                    .Feed(absl::string_view(bytes).substr(at, piece),
                          [&](const H2FrameHeader& h) {
                            seen.push_back({h.type, h.stream_id, h.length});
                          })
                    .ok());
  }
  return seen;
}

TEST(H2FrameReaderTest, FindsEveryHeaderWhateverTheBytesAreCutInto) {
  const std::string stream =
      std::string(kH2ClientPreface) + Frame(6, kH2Settings, 0, 0) +
      Frame(20, kH2Headers, 4, 1) + Frame(0, kH2Data, 1, 1) +
      Frame(4, kH2RstStream, 0, 1) + Frame(4, kH2RstStream, 0, 0x80000003);
  const std::vector<Seen> want = {{kH2Settings, 0, 6},
                                  {kH2Headers, 1, 20},
                                  {kH2Data, 1, 0},
                                  {kH2RstStream, 1, 4},
                                  {kH2RstStream, 3, 4}};  // reserved bit off
  for (size_t piece : {1, 2, 7, 9, 10, 24, 1000}) {
    H2FrameReader reader(H2FrameReader::Side::kClient);
    EXPECT_EQ(FeedInPieces(reader, stream, piece), want) << piece;
    EXPECT_EQ(reader.fed(), stream.size());
    EXPECT_EQ(reader.complete_end(), stream.size());
  }
}

TEST(H2FrameReaderTest, CompleteEndStopsBeforeAPartialFrame) {
  H2FrameReader reader(H2FrameReader::Side::kServer);
  const std::string whole = Frame(3, kH2Data, 0, 1);
  const std::string part = Frame(10, kH2Data, 0, 1).substr(0, 12);
  EXPECT_TRUE(reader.Feed(whole + part, [](const H2FrameHeader&) {}).ok());
  EXPECT_EQ(reader.fed(), whole.size() + part.size());
  EXPECT_EQ(reader.complete_end(), whole.size());
  EXPECT_TRUE(
      reader.Feed(std::string(7, 'x'), [](const H2FrameHeader&) {}).ok());
  EXPECT_EQ(reader.complete_end(), reader.fed());
}

TEST(H2FrameReaderTest, AClientWithoutThePrefaceIsRefused) {
  H2FrameReader reader(H2FrameReader::Side::kClient);
  absl::Status s =
      reader.Feed("GET / HTTP/1.1\r\n\r\n", [](const H2FrameHeader&) {});
  EXPECT_EQ(s, absl::InvalidArgumentError("not an HTTP/2 connection preface"));
  EXPECT_EQ(
      reader.Feed(std::string(kH2ClientPreface), [](const H2FrameHeader&) {}),
      s);
}

TEST(H2FrameReaderTest, GoAwayFrameIsWellFormed) {
  const std::string frame = H2GoAwayFrame(7, kH2EnhanceYourCalm);
  EXPECT_EQ(frame, std::string("\0\0\x08\x07\0\0\0\0\0"
                               "\0\0\0\x07"
                               "\0\0\0\x0b",
                               17));
}

}  // namespace
}  // namespace msgq::grpc_front
