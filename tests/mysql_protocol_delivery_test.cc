// Delivery through msgqd's MySQL-protocol port shares the table with gRPC
// streams: round-robin between both kinds of subscriber, a client that
// disconnects hands its messages back, and one that stops reading holds a
// message only until its ack wait runs out.
#include <signal.h>

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "tests/mysql_protocol_fixture.h"
#include "tests/wait_events.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class MysqlProtocolDeliveryTest : public MysqlProtocolTest {
 protected:
  // The ids of the rows the mariadb client printed (after its header).
  std::vector<std::string> ClientIds(const launch::ChildProcess& child) {
    std::vector<std::string> ids;
    std::vector<std::string> lines = ClientLines(child);
    for (size_t i = 1; i < lines.size(); ++i) {
      ids.push_back(std::string(lines[i].substr(0, lines[i].find('\t'))));
    }
    return ids;
  }
  bool WaitForSubscribers(const std::string& table, int n) {
    return Eventually(
        [&] { return FindTable(stub_.get(), table).subscribers() == n; },
        absl::Seconds(10));
  }
  int64_t Sent(const std::string& table) {
    int64_t n = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar("SELECT COUNT(*) FROM msgq.`" +
                                             table + "` WHERE epoch > 0"),
                                 &n));
    return n;
  }
};

// A raw client logged in that sent `stream * from demo` and reads nothing
// until the test asks; null after a failed ASSERT.
std::unique_ptr<RawClient> StartUnreadStream(int port) {
  auto raw = RawClient::Connect(port);
  EXPECT_TRUE(raw.ok()) << raw.status();
  if (!raw.ok()) return nullptr;
  auto login = (*raw)->Login(kUser, kPassword);
  EXPECT_TRUE(login.ok()) << login.status();
  if (!login.ok() || login->payload.empty() || login->payload[0] != '\0') {
    return nullptr;
  }
  if (!(*raw)->Send(0, "\x03stream * from demo")) return nullptr;
  return *std::move(raw);
}

// Reads what msgqd wrote to `raw`'s stream until nothing more comes for
// `quiet`: the id (first column) of each row after the result set header.
std::vector<std::string> DrainIds(RawClient& raw, absl::Duration quiet) {
  std::vector<std::string> ids;
  size_t header = 0;  // packets of the header still to skip
  bool first = true;
  while (true) {
    absl::StatusOr<mysql_protocol::Packet> p = raw.Read(quiet);
    if (!p.ok()) return ids;
    const std::string& payload = p->payload;
    if (first) {  // the column count, then the definitions and an EOF
      first = false;
      header = static_cast<uint8_t>(payload[0]) + 1;
      continue;
    }
    if (header > 0) {
      --header;
      continue;
    }
    const size_t length = static_cast<uint8_t>(payload[0]);
    ids.push_back(payload.substr(1, length));
  }
}

constexpr char kStuckSettings[] =
    "vt_batch_size=1,vt_ack_wait=3,vt_min_backoff=0.5,vt_max_backoff=0.5,"
    "vt_poller_interval=0.2";
// An unacked message is due again this long after its send.
constexpr absl::Duration kResendAfter = absl::Milliseconds(3500);

TEST_F(MysqlProtocolDeliveryTest, RoundRobinWithAGrpcSubscriber) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "vt_batch_size=1"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from msgq.demo");
  ASSERT_NE(client, nullptr);
  StreamCollector grpc(stub_.get(), "demo");
  ASSERT_TRUE(WaitForSubscribers("demo", 2)) << client->Log();
  for (int i = 1; i <= 20; ++i)
    ASSERT_NO_FATAL_FAILURE(InsertRange("demo", i, i));
  ASSERT_TRUE(Eventually(
      [&] { return ClientIds(*client).size() + grpc.row_count() >= 20; },
      absl::Seconds(20)))
      << client->Log();
  const std::vector<std::string> mysql_ids = ClientIds(*client);
  const std::vector<std::string> grpc_ids = grpc.ids();
  EXPECT_FALSE(mysql_ids.empty());
  EXPECT_FALSE(grpc_ids.empty());
  // None twice while unacked (the ack wait is 30 s).
  std::multiset<int> all;
  for (const auto& ids : {mysql_ids, grpc_ids}) {
    for (const std::string& id : ids) {
      int n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(id, &n)) << id;
      all.insert(n);
    }
  }
  std::multiset<int> want;
  for (int i = 1; i <= 20; ++i) want.insert(i);
  EXPECT_EQ(all, want);
  EXPECT_EQ(mysql_ids.size() + grpc_ids.size(), 20u);
}

TEST_F(MysqlProtocolDeliveryTest, DisconnectedClientHandsItsMessagesBack) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "vt_ack_wait=1"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from demo");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 1)) << client->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_TRUE(WaitForLines(*client, 4)) << client->Log();
  EXPECT_THAT(ClientIds(*client), ElementsAre("1", "2", "3"));
  client->Stop(SIGKILL, absl::Seconds(5));
  ASSERT_TRUE(WaitForSubscribers("demo", 0));
  // Unacked, they come back after the ack wait, to the next subscriber.
  StreamCollector grpc(stub_.get(), "demo");
  ASSERT_TRUE(grpc.WaitForRows(3, absl::Seconds(20)));
  EXPECT_THAT(grpc.ids(), UnorderedElementsAre("1", "2", "3"));
  for (const auto& response : grpc.responses()) {
    for (const auto& row : response.rows()) EXPECT_GE(row.epoch(), 1);
  }
}

// A MySQL-protocol client that stops reading is skipped, never waited for:
// its socket fills, it holds at most a few batches, and a gRPC subscriber
// on the same table gets the rest.
TEST_F(MysqlProtocolDeliveryTest, AClientThatDoesNotReadIsSkipped) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "vt_batch_size=1"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto raw = RawClient::Connect(port_);
  ASSERT_TRUE(raw.ok());
  auto login = (*raw)->Login(kUser, kPassword);
  ASSERT_TRUE(login.ok());
  ASSERT_EQ(login->payload[0], '\0');
  ASSERT_TRUE((*raw)->Send(0, "\x03stream * from demo"));
  StreamCollector grpc(stub_.get(), "demo");
  ASSERT_TRUE(WaitForSubscribers("demo", 2));
  // 200 messages of 100 kB: 20 MB, more than loopback socket buffers hold.
  constexpr int kMessages = 200;
  for (int i = 1; i <= kMessages; i += 20) {
    ASSERT_NO_FATAL_FAILURE(
        Exec(absl::StrCat("INSERT INTO msgq.demo (id, message) SELECT seq, "
                          "JSON_OBJECT('p', REPEAT('x', 100000)) FROM seq_",
                          i, "_to_", i + 19)));
  }
  // The raw client reads nothing; gRPC gets everything it does not hold.
  EXPECT_TRUE(
      Eventually([&] { return grpc.row_count() >= 120; }, absl::Seconds(30)))
      << grpc.row_count();
  // One snapshot: rows keep arriving while this runs, so ids() and a later
  // row_count() can differ without any duplicate (the cause of a failure
  // once, 131 distinct ids against a row_count() of 132).
  const std::vector<std::string> ids = grpc.ids();
  std::set<int> unique;
  for (const std::string& id : ids) {
    int n = 0;
    ASSERT_TRUE(absl::SimpleAtoi(id, &n)) << id;
    EXPECT_GE(n, 1);
    EXPECT_LE(n, kMessages);
    unique.insert(n);
  }
  EXPECT_GE(ids.size(), 120u);
  EXPECT_EQ(unique.size(), ids.size()) << "an id was sent twice";
}

// Vitess's two-stream case with the stock client: two `mariadb` streams, the
// second stopped (SIGSTOP) so it reads nothing; two messages, one each,
// nobody acks. The message the stopped one held is resent to the reading
// one once its ack wait runs out, not to the stopped one again.
TEST_F(MysqlProtocolDeliveryTest,
       ResendOfAStoppedClientsMessageGoesToTheOther) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", kStuckSettings));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto reading = StartMariadb("stream * from demo");
  ASSERT_NE(reading, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 1)) << reading->Log();
  auto stopped = StartMariadb("stream * from demo");
  ASSERT_NE(stopped, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 2)) << stopped->Log();
  ASSERT_EQ(kill(stopped->pid(), SIGSTOP), 0);
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 1));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 2, 2));
  ASSERT_TRUE(Eventually([&] { return Sent("demo") == 2; }, absl::Seconds(10)));
  const absl::Time sent = absl::Now();
  // Round-robin: one message each.
  ASSERT_TRUE(WaitForLines(*reading, 2)) << reading->Log();
  ASSERT_EQ(ClientIds(*reading).size(), 1u) << reading->Log();
  const std::string own = ClientIds(*reading)[0];
  const std::string other = own == "1" ? "2" : "1";
  // Within the ack wait, the backoff and one round of slack.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::vector<std::string> ids = ClientIds(*reading);
        return std::find(ids.begin(), ids.end(), other) != ids.end();
      },
      kResendAfter + absl::Seconds(3)))
      << "reading client got " << absl::StrJoin(ClientIds(*reading), ",")
      << " in " << absl::Now() - sent;
  stopped->Stop(SIGKILL, absl::Seconds(5));
}

// A client that reads nothing (a raw socket) next to one that reads and
// whose rows the test acks: once a message the stuck client held ran out
// its ack wait, it gets no new sends while the live one has a free slot;
// the live one takes everything, and the stuck one's socket holds that one
// message only.
TEST_F(MysqlProtocolDeliveryTest, AStuckClientGetsNoNewSendsWhileALiveOneDoes) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", kStuckSettings));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto live = StartMariadb("stream * from demo");
  ASSERT_NE(live, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 1)) << live->Log();
  std::unique_ptr<RawClient> stuck = StartUnreadStream(port_);
  ASSERT_NE(stuck, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 2));
  std::set<std::string> acked;
  auto ack_new = [&] {
    std::vector<std::string> ids;
    for (const std::string& id : ClientIds(*live)) {
      if (acked.insert(id).second) ids.push_back(id);
    }
    if (ids.empty()) return;
    int64_t n = 0;
    grpc::Status status = AckIds(stub_.get(), "demo", ids, &n);
    EXPECT_TRUE(status.ok()) << status.error_message();
  };
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 1));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 2, 2));
  ASSERT_TRUE(Eventually([&] { return Sent("demo") == 2; }, absl::Seconds(10)));
  ASSERT_TRUE(WaitForLines(*live, 2)) << live->Log();
  ASSERT_EQ(ClientIds(*live).size(), 1u) << live->Log();
  const std::string held = ClientIds(*live)[0] == "1" ? "2" : "1";
  ack_new();
  // The stuck client's message comes to the live one after its ack wait.
  ASSERT_TRUE(Eventually(
      [&] {
        ack_new();
        return acked.count(held) == 1;
      },
      kResendAfter + absl::Seconds(5)))
      << "live client got " << absl::StrJoin(ClientIds(*live), ",");
  // New messages, each inserted once the one before arrived (so the live
  // client always has a free slot): all go to the live client.
  for (int i = 3; i <= 12; ++i) {
    ASSERT_NO_FATAL_FAILURE(InsertRange("demo", i, i));
    EXPECT_TRUE(Eventually(
        [&] {
          ack_new();
          return acked.count(absl::StrCat(i)) == 1;
        },
        absl::Seconds(5)))
        << i << ": live client got " << absl::StrJoin(ClientIds(*live), ",");
  }
  EXPECT_EQ(acked.size(), 12u);
  // What the stuck client was sent: the one message, once.
  EXPECT_THAT(DrainIds(*stuck, absl::Seconds(1)), ElementsAre(held));
}

// The engine ends a stream when its table goes: the result set ends with an
// error packet.
TEST_F(MysqlProtocolDeliveryTest, DroppedTableEndsTheStreamWithAnError) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from demo");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 1)) << client->Log();
  ASSERT_NO_FATAL_FAILURE(Exec("DROP TABLE msgq.demo"));
  EXPECT_EQ(client->Stop(0, absl::Seconds(20)), 1) << client->Log();
  EXPECT_THAT(
      client->Log(),
      ::testing::HasSubstr("ERROR 1105 (HY000) at line 1: UNAVAILABLE: message "
                           "table was changed or dropped: reconnect"));
}

// Vitess streams a message table right after its CREATE, and so does
// msgqd: the binlog carries the DDL, so nothing waits for the schema reload
// (60 s here). A `stream * from` sent in the first second after the CREATE
// (and after an ALTER that adds a column) streams, with the new column.
TEST_F(MysqlProtocolDeliveryTest, ATableStreamsWithinASecondOfItsCreate) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "vt_poller_interval=30"));
  ASSERT_NO_FATAL_FAILURE(
      StartWithMysqlProtocol({"--schema_reload_interval=60s"}));
  WaitForBinlog("demo");
  // Starts `stream * from fresh` until one is accepted (a refused one
  // exits at once, 1146); the time since `since` when one subscribed.
  auto stream_after = [&](absl::Time since,
                          std::unique_ptr<launch::ChildProcess>* client) {
    while (absl::Now() - since < absl::Seconds(5)) {
      *client = StartMariadb("stream * from fresh");
      if (*client == nullptr) break;
      Eventually(
          [&] {
            return !(*client)->running() ||
                   FindTable(stub_.get(), "fresh").subscribers() == 1;
          },
          absl::Seconds(5));
      if ((*client)->running()) return absl::Now() - since;
      EXPECT_THAT((*client)->Log(), ::testing::HasSubstr("ERROR 1146"));
    }
    return absl::InfiniteDuration();
  };
  ASSERT_NO_FATAL_FAILURE(CreateTable("fresh", "vt_poller_interval=30"));
  std::unique_ptr<launch::ChildProcess> client;
  const absl::Duration created = stream_after(absl::Now(), &client);
  std::printf("streamed %.0f ms after the CREATE\n",
              absl::ToDoubleMilliseconds(created));
  ASSERT_LT(created, absl::Seconds(1)) << server_->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("fresh", 1, 1));
  ASSERT_TRUE(WaitForLines(*client, 2)) << client->Log();
  EXPECT_EQ(ClientIds(*client), std::vector<std::string>{"1"});

  // An ALTER that adds a column ends the stream; the next one has it.
  ASSERT_NO_FATAL_FAILURE(
      Exec("ALTER TABLE msgq.fresh ADD COLUMN note VARCHAR(16) DEFAULT 'x'"));
  EXPECT_EQ(client->Stop(0, absl::Seconds(20)), 1) << client->Log();
  EXPECT_THAT(client->Log(),
              ::testing::HasSubstr("message table was changed or dropped"));
  const absl::Duration altered = stream_after(absl::Now(), &client);
  std::printf("streamed %.0f ms after the ALTER\n",
              absl::ToDoubleMilliseconds(altered));
  ASSERT_LT(altered, absl::Seconds(1)) << server_->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("fresh", 2, 2));
  ASSERT_TRUE(WaitForLines(*client, 2)) << client->Log();
  EXPECT_THAT(ClientLines(*client)[0], ::testing::HasSubstr("note"));
}

// Acks stay on gRPC (or a plain UPDATE): a message received over the MySQL
// protocol and acked with MessageAck is not redelivered.
TEST_F(MysqlProtocolDeliveryTest, AckedOverGrpcIsNotRedelivered) {
  // An unacked row would come back 3.5 s after its send: time enough for
  // the ack and the UPDATE below to commit first on a loaded machine.
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("demo",
                  "vt_ack_wait=3,vt_min_backoff=0.5,vt_max_backoff=0.5,"
                  "vt_poller_interval=0.5"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from demo");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForSubscribers("demo", 1)) << client->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 2));
  ASSERT_TRUE(WaitForLines(*client, 3)) << client->Log();
  const absl::Time received = absl::Now();
  int64_t acked = 0;
  ASSERT_TRUE(AckIds(stub_.get(), "demo", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "UPDATE msgq.demo SET time_acked = ", NowNanos(), " WHERE id = 2")));
  // Past the ack wait and backoff (3.5 s after the send, before `received`)
  // the polls that follow (every 0.5 s) would read an unacked row: none
  // comes back.
  absl::SleepFor(received + absl::Milliseconds(3500) - absl::Now());
  ASSERT_TRUE(WaitForPolls(stub_.get(), "demo", Polls(stub_.get(), "demo") + 3,
                           absl::Seconds(20)));
  EXPECT_THAT(ClientIds(*client), ElementsAre("1", "2"));
}

}  // namespace
}  // namespace msgq::testing
