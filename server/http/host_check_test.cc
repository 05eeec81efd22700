#include "server/http/host_check.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(HostCheckTest, LoopbackNamesWithOrWithoutAPort) {
  HostCheck check("127.0.0.1:15998", {});
  for (const char* host :
       {"localhost", "localhost:15998", "LocalHost.", "localhost.:80",
        "127.0.0.1", "127.0.0.1:15998", "127.255.0.9:1", "[::1]", "[::1]:80",
        " 127.0.0.1 "}) {
    EXPECT_TRUE(check.Allowed(host)) << host;
  }
}

TEST(HostCheckTest, OtherNamesAndMalformedHostsAreRefused) {
  HostCheck check("127.0.0.1:15998", {});
  for (const char* host :
       {"evil.example", "evil.example:15998", "localhost.evil.example",
        "128.0.0.1", "10.0.0.5", "[::2]", "", ":80",
        "localhost:", "localhost:x", "localhost:123456", "[::1", "[::1]x",
        "127.0.0.1:80:80", "127.0.0.1.evil.example"}) {
    EXPECT_FALSE(check.Allowed(host)) << host;
  }
}

TEST(HostCheckTest, TheListenHost) {
  HostCheck by_ip("10.0.0.5:15998", {});
  EXPECT_TRUE(by_ip.Allowed("10.0.0.5:15998"));
  EXPECT_FALSE(by_ip.Allowed("10.0.0.6"));
  HostCheck by_name("Msgq.Example:15998", {});
  EXPECT_TRUE(by_name.Allowed("msgq.example"));
  EXPECT_FALSE(by_name.Allowed("evil.example"));
  HostCheck v6("[fd00::5]:15998", {});
  EXPECT_TRUE(v6.Allowed("[FD00::5]:15998"));
  EXPECT_FALSE(v6.Allowed("[fd00::6]"));
}

TEST(HostCheckTest, AWildcardListenAllowsAnyAddressButNoName) {
  for (const char* listen : {"0.0.0.0:15998", "[::]:15998", ":15998"}) {
    HostCheck check(listen, {});
    EXPECT_TRUE(check.Allowed("192.168.1.20:15998")) << listen;
    EXPECT_TRUE(check.Allowed("[2001:db8::1]")) << listen;
    EXPECT_TRUE(check.Allowed("localhost")) << listen;
    EXPECT_FALSE(check.Allowed("evil.example")) << listen;
    EXPECT_FALSE(check.Allowed("192.168.1.20.nip.io")) << listen;
  }
}

TEST(HostCheckTest, ExtraNamesAndTheStar) {
  HostCheck check("127.0.0.1:1", {"msgq.internal", "Console.Example:8080"});
  EXPECT_TRUE(check.Allowed("msgq.internal:443"));
  EXPECT_TRUE(check.Allowed("console.example"));
  EXPECT_FALSE(check.Allowed("other.internal"));
  HostCheck any("127.0.0.1:1", {"*"});
  EXPECT_TRUE(any.Allowed("evil.example"));
  EXPECT_TRUE(any.Allowed(""));
}

}  // namespace
}  // namespace msgq
