#include "server/http/http_params.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(UrlDecodeTest, PlusPercentAndBadEscapes) {
  EXPECT_EQ(UrlDecode("a+b%20c%2bd%2B"), "a b c+d+");
  EXPECT_EQ(UrlDecode("%41%6a%6A"), "Ajj");
  // Not two hex digits: kept as they are (civetweb's rule).
  EXPECT_EQ(UrlDecode("100%"), "100%");
  EXPECT_EQ(UrlDecode("%4"), "%4");
  EXPECT_EQ(UrlDecode("%zz%4g"), "%zz%4g");
  EXPECT_EQ(UrlDecode("%%41"), "%A");
  EXPECT_EQ(UrlDecode("%00x"), std::string("\0x", 2));
  EXPECT_EQ(UrlDecode(""), "");
}

TEST(HttpParamsTest, QueryFirstThenBody) {
  absl::StatusOr<HttpParams> p =
      HttpParams::Parse("table=a&id=1", "id=2&id=3&name=x+y", 100);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->pairs(),
              ElementsAre(Pair("table", "a"), Pair("id", "1"), Pair("id", "2"),
                          Pair("id", "3"), Pair("name", "x y")));
  EXPECT_EQ(p->Get("id"), "1");
  EXPECT_EQ(p->Get("id", 2), "3");
  EXPECT_EQ(p->Get("id", 3), std::nullopt);
  EXPECT_EQ(p->Get("id", -1), std::nullopt);
  EXPECT_EQ(p->Get("missing"), std::nullopt);
  EXPECT_THAT(p->GetAll("id"), ElementsAre("1", "2", "3"));
  EXPECT_THAT(p->GetAll("missing"), ElementsAre());
}

TEST(HttpParamsTest, SegmentsWithoutEqualsAndEmptyOnesAreNoParameters) {
  absl::StatusOr<HttpParams> p =
      HttpParams::Parse("&flag&&a=&=v&b==c&", "", 100);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->pairs(),
              ElementsAre(Pair("a", ""), Pair("", "v"), Pair("b", "=c")));
  EXPECT_EQ(p->Get("flag"), std::nullopt);
  EXPECT_EQ(p->Get("a"), "");
}

TEST(HttpParamsTest, NamesAreDecodedAndMatchedExactly) {
  absl::StatusOr<HttpParams> p = HttpParams::Parse("i%64=1&ID=2&a+b=3", "", 9);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->GetAll("id"), ElementsAre("1"));
  EXPECT_THAT(p->GetAll("ID"), ElementsAre("2"));
  EXPECT_EQ(p->Get("a b"), "3");
}

TEST(HttpParamsTest, TheCapCountsQueryAndBody) {
  EXPECT_TRUE(HttpParams::Parse("a=1&b=2", "c=3", 3).ok());
  EXPECT_EQ(HttpParams::Parse("a=1&b=2", "c=3&d=4", 3).status(),
            absl::ResourceExhaustedError("more than 3 parameters"));
  // Segments without '=' count: each costs a scan.
  EXPECT_EQ(HttpParams::Parse("x&y&z&w", "", 3).status(),
            absl::ResourceExhaustedError("more than 3 parameters"));
}

// The case a parser that rescans the body per id makes quadratic: a
// megabyte of "id=1&" (209,715 ids) is parsed once; over the default cap it
// is refused before any is decoded.
TEST(HttpParamsTest, AMegabyteOfIdsIsLinear) {
  std::string body;
  while (body.size() + 5 <= (1 << 20)) body += "id=1&";
  const absl::Time start = absl::Now();
  absl::StatusOr<HttpParams> all = HttpParams::Parse("", body, 1000000);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->GetAll("id").size(), 209715u);
  EXPECT_EQ(HttpParams::Parse("", body, 100000).status(),
            absl::ResourceExhaustedError("more than 100000 parameters"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

}  // namespace
}  // namespace msgq
