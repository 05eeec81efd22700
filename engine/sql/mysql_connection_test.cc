#include "engine/sql/mysql_connection.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

// The default link timeout: probes after 5 s idle, then every second; the
// kernel gives up 10 s after it last heard from the server.
TEST(TcpKeepaliveFor, DefaultLinkTimeout) {
  const TcpKeepalive k = TcpKeepaliveFor(absl::Seconds(10));
  EXPECT_EQ(k.idle_seconds, 5);
  EXPECT_EQ(k.interval_seconds, 1);
  EXPECT_EQ(k.count, 5);
  EXPECT_EQ(k.user_timeout_ms, 10000);
}

TEST(TcpKeepaliveFor, LongLinkTimeoutProbesEveryTenth) {
  const TcpKeepalive k = TcpKeepaliveFor(absl::Seconds(60));
  EXPECT_EQ(k.idle_seconds, 30);
  EXPECT_EQ(k.interval_seconds, 6);
  EXPECT_EQ(k.count, 5);
  EXPECT_EQ(k.user_timeout_ms, 60000);
}

// The kernel counts keepalive times in whole seconds, at least 1.
TEST(TcpKeepaliveFor, ShortLinkTimeoutKeepsWholeSeconds) {
  TcpKeepalive k = TcpKeepaliveFor(absl::Milliseconds(2500));
  EXPECT_EQ(k.idle_seconds, 1);
  EXPECT_EQ(k.interval_seconds, 1);
  EXPECT_EQ(k.count, 1);
  EXPECT_EQ(k.user_timeout_ms, 2500);
  k = TcpKeepaliveFor(absl::Milliseconds(10));
  EXPECT_EQ(k.idle_seconds, 1);
  EXPECT_EQ(k.interval_seconds, 1);
  EXPECT_EQ(k.count, 1);
  EXPECT_EQ(k.user_timeout_ms, 1000);
}

// What a Galera node outside the primary component answers (a node cut off
// in a minority, a joiner): ER_UNKNOWN_COM_ERROR, "WSREP has not yet
// prepared node for application use". Another node serves: UNAVAILABLE,
// and the connection is dropped so the reconnect finds that node.
TEST(ClassifyMysqlError, GaleraNonPrimaryNodeIsUnavailable) {
  const MysqlErrorClass c = ClassifyMysqlError(1047);
  EXPECT_EQ(c.code, absl::StatusCode::kUnavailable);
  EXPECT_TRUE(c.drop_connection);
}

// Its neighbours keep their meaning: 1046 (no database selected) and 1048
// (column cannot be NULL) are the statement's own fault.
TEST(ClassifyMysqlError, NeighboursOf1047AreInternal) {
  for (unsigned int code : {1046u, 1048u}) {
    const MysqlErrorClass c = ClassifyMysqlError(code);
    EXPECT_EQ(c.code, absl::StatusCode::kInternal) << code;
    EXPECT_FALSE(c.drop_connection) << code;
  }
}

}  // namespace
}  // namespace msgq
