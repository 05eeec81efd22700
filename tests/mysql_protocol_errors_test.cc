// msgqd's MySQL-protocol port against malformed and hostile input, through
// hand-driven sockets: every case gets the ERR packet the protocol allows,
// and msgqd keeps serving.
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "server/mysql_protocol/command.h"
#include "tests/mysql_protocol_fixture.h"

namespace msgq::testing {
namespace {

namespace mp = ::msgq::mysql_protocol;
using namespace std::string_literals;

class MysqlProtocolErrorsTest : public MysqlProtocolTest {
 protected:
  std::unique_ptr<RawClient> LoggedIn() {
    auto raw = RawClient::Connect(port_);
    EXPECT_TRUE(raw.ok());
    if (!raw.ok()) return nullptr;
    auto answer = (*raw)->Login(kUser, kPassword);
    EXPECT_TRUE(answer.ok()) << answer.status();
    if (!answer.ok()) return nullptr;
    EXPECT_EQ(answer->payload[0], '\0');  // OK
    return *std::move(raw);
  }
  // msgqd still serves: a fresh login answers `select 1` with one row.
  void ExpectStillServing() {
    std::unique_ptr<RawClient> c = LoggedIn();
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(c->Send(0, "\x03select 1"s));
    auto count = c->Read();
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(count->payload, "\x01"s);
  }
};

TEST_F(MysqlProtocolErrorsTest, GarbageHandshakeIs1043ThenClose) {
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto raw = RawClient::Connect(port_);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE((*raw)->Read().ok());  // the server's handshake
  ASSERT_TRUE((*raw)->Send(1, "\x01\x02"s));
  auto err = (*raw)->Read();
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_EQ(ErrCode(*err), 1043);
  EXPECT_EQ(err->seq, 2);
  EXPECT_TRUE((*raw)->WaitClosed(absl::Seconds(5)));
  ASSERT_NO_FATAL_FAILURE(ExpectStillServing());
}

TEST_F(MysqlProtocolErrorsTest, UnknownCommandIs1047AndTheConnectionStays) {
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  std::unique_ptr<RawClient> c = LoggedIn();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(0, "\x16select ?"s));  // COM_STMT_PREPARE
  auto err = c->Read();
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(ErrCode(*err), 1047);
  EXPECT_EQ(err->payload.substr(3, 6), "#08S01");
  ASSERT_TRUE(c->Send(0, ""));  // an empty command packet
  err = c->Read();
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(ErrCode(*err), 1047);
  ASSERT_TRUE(c->Send(0, "\x03stream * from"s));
  err = c->Read();
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(ErrCode(*err), 1064);
  ASSERT_TRUE(c->Send(0, "\x0e"s));  // COM_PING
  auto ok = c->Read();
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->payload, mp::OkPayload());
  EXPECT_EQ(ok->seq, 1);
}

TEST_F(MysqlProtocolErrorsTest, OversizedPacketIs1153ThenClose) {
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  std::unique_ptr<RawClient> c = LoggedIn();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->SendBytes("\xff\xff\xff\x00\x03"s));  // a 16 MiB packet
  auto err = c->Read();
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(ErrCode(*err), 1153);
  EXPECT_TRUE(c->WaitClosed(absl::Seconds(5)));
  ASSERT_NO_FATAL_FAILURE(ExpectStillServing());
}

TEST_F(MysqlProtocolErrorsTest, OutOfOrderSequenceIs1156ThenClose) {
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  std::unique_ptr<RawClient> c = LoggedIn();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(5, "\x0e"s));
  auto err = c->Read();
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(ErrCode(*err), 1156);
  EXPECT_TRUE(c->WaitClosed(absl::Seconds(5)));
}

TEST_F(MysqlProtocolErrorsTest, SilentClientIsClosedAfterHandshakeTimeout) {
  ASSERT_NO_FATAL_FAILURE(
      StartWithMysqlProtocol({"--mysql_protocol_handshake_timeout=500ms"}));
  auto raw = RawClient::Connect(port_);
  ASSERT_TRUE(raw.ok());
  const absl::Time start = absl::Now();
  EXPECT_TRUE((*raw)->WaitClosed(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_NO_FATAL_FAILURE(ExpectStillServing());
}

TEST_F(MysqlProtocolErrorsTest, OneTooManyConnectionsIs1040) {
  ASSERT_NO_FATAL_FAILURE(
      StartWithMysqlProtocol({"--mysql_protocol_max_connections=1"}));
  std::unique_ptr<RawClient> first = LoggedIn();
  ASSERT_NE(first, nullptr);
  auto second = RawClient::Connect(port_);
  ASSERT_TRUE(second.ok());
  auto err = (*second)->Read();
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_EQ(ErrCode(*err), 1040);
  EXPECT_THAT(err->payload, ::testing::HasSubstr("Too many connections"));
  EXPECT_TRUE((*second)->WaitClosed(absl::Seconds(5)));
  first.reset();  // its slot frees once its thread is reaped
  EXPECT_TRUE(Eventually(
      [&] {
        auto c = RawClient::Connect(port_);
        if (!c.ok()) return false;
        auto hello = (*c)->Read();
        return hello.ok() && ErrCode(*hello) == 0;
      },
      absl::Seconds(10)));
}

TEST_F(MysqlProtocolErrorsTest, QuitDuringAStreamUnsubscribes) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  std::unique_ptr<RawClient> c = LoggedIn();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(0, "\x03STREAM * FROM `msgq`.`q`;"s));
  // Count, id, message, EOF.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c->Read().ok());
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 1; },
                 absl::Seconds(10)));
  ASSERT_TRUE(c->Send(0, "\x01"s));  // COM_QUIT
  EXPECT_TRUE(c->WaitClosed(absl::Seconds(5)));
  EXPECT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 0; },
                 absl::Seconds(10)));
}

}  // namespace
}  // namespace msgq::testing
