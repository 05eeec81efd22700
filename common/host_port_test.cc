#include "common/host_port.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

std::string Show(const absl::StatusOr<HostPort>& hp) {
  if (!hp.ok()) return std::string(hp.status().message());
  return hp->host + "|" + (hp->port ? std::to_string(*hp->port) : "none");
}

TEST(ParseHostPortTest, ListenAddresses) {
  EXPECT_EQ(Show(ParseHostPort("127.0.0.1:8080")), "127.0.0.1|8080");
  EXPECT_EQ(Show(ParseHostPort("[::1]:0")), "::1|0");
  EXPECT_EQ(Show(ParseHostPort(":3307")), "|3307");
  EXPECT_EQ(Show(ParseHostPort("[::]:50051")), "::|50051");
  EXPECT_EQ(Show(ParseHostPort("localhost:65535")), "localhost|65535");
}

TEST(ParseHostPortTest, RefusalsSayWhy) {
  EXPECT_EQ(Show(ParseHostPort("nonsense")), "want HOST:PORT");
  EXPECT_EQ(Show(ParseHostPort("[::1]")), "want HOST:PORT");
  EXPECT_EQ(Show(ParseHostPort("::1:3306")), "put an IPv6 address in brackets");
  EXPECT_EQ(Show(ParseHostPort("[::1")), "no closing ']'");
  EXPECT_EQ(Show(ParseHostPort("[::1]x")), "text after ']'");
  EXPECT_EQ(Show(ParseHostPort("[::1]:")), "empty port");
  EXPECT_EQ(Show(ParseHostPort("a:")), "empty port");
  EXPECT_EQ(Show(ParseHostPort("a:x")), "the port is not a number in 0..65535");
  EXPECT_EQ(Show(ParseHostPort("a:65536")),
            "the port is not a number in 0..65535");
  EXPECT_EQ(Show(ParseHostPort("a:-1")),
            "the port is not a number in 0..65535");
}

TEST(ParseHostPortTest, AnOptionalPortAndAMinimum) {
  const HostPortRules endpoint{.port_required = false, .min_port = 1};
  EXPECT_EQ(Show(ParseHostPort("db1", endpoint)), "db1|none");
  EXPECT_EQ(Show(ParseHostPort("[fe80::1]", endpoint)), "fe80::1|none");
  EXPECT_EQ(Show(ParseHostPort("db1:3307", endpoint)), "db1|3307");
  EXPECT_EQ(Show(ParseHostPort("db1:0", endpoint)),
            "the port is not a number in 1..65535");
  EXPECT_EQ(Show(ParseHostPort("", endpoint)), "|none");
}

TEST(IsLoopbackHostTest, AddressesNotNames) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("0:0:0:0:0:0:0:1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("LocalHost"));
  EXPECT_FALSE(IsLoopbackHost(""));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("127.example.com"));
  EXPECT_FALSE(IsLoopbackHost("[::1]"));  // brackets are ParseHostPort's
  EXPECT_FALSE(IsLoopbackHost("localhost.example.com"));
}

}  // namespace
}  // namespace msgq
