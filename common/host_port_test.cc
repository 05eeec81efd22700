#include "common/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

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

// The key of a client's textual address, through the sockaddr accept() fills.
std::string KeyOf(const std::string& ip) {
  sockaddr_storage storage{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
  } else {
    return "unparsed";
  }
  return ClientAddressKey(reinterpret_cast<const sockaddr*>(&storage));
}

TEST(ClientAddressKeyTest, IPv4AsItIsIPv6ByItsSlash64) {
  EXPECT_EQ(KeyOf("127.0.0.2"), "127.0.0.2");
  EXPECT_EQ(KeyOf("::ffff:192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(KeyOf("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
  EXPECT_EQ(KeyOf("2001:db8:1:2::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(KeyOf("2001:db8:1:3::1"), "2001:db8:1:3::/64");
  EXPECT_EQ(KeyOf("::1"), "::/64");
  EXPECT_EQ(ClientAddressKey(nullptr), "?");
  sockaddr unix_family{};
  unix_family.sa_family = AF_UNIX;
  EXPECT_EQ(ClientAddressKey(&unix_family), "?");
}

}  // namespace
}  // namespace msgq
