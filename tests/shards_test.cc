// Shards (docs/api.md#clients-of-several-servers): two private MariaDBs, one
// msgqd each, the same message table on both with the same ids, and one C++
// Subscriber subscribed to both servers. Ids collide across the shards, so an
// ack sent to the wrong server would settle a different message: these tests
// check that every message is settled on the shard it came from, and that one
// server going away does not stop the other.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "msgq/client.h"
#include "msgq/subscriber.h"
#include "tests/test_env.h"

namespace msgq::testing {
namespace {

constexpr int kRows = 20;

struct Shard {
  std::unique_ptr<PrivateMariaDb> db;
  std::unique_ptr<Msgqd> server;
};

class ShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (Shard* shard : {&a_, &b_}) {
      auto db = PrivateMariaDb::Start({});
      ASSERT_TRUE(db.ok()) << db.status();
      shard->db = *std::move(db);
      ASSERT_TRUE(shard->db->Exec("CREATE DATABASE msgq").ok());
      ASSERT_TRUE(shard->db->Exec("USE msgq").ok());
      ASSERT_TRUE(
          shard->db
              ->Exec(MessageTableDdl("q", MessageComment("vt_ack_wait=30")))
              .ok());
      ASSERT_NO_FATAL_FAILURE(StartServer(*shard, "127.0.0.1:0"));
    }
  }

  void StartServer(Shard& shard, const std::string& listen) {
    auto server = Msgqd::Start(
        *shard.db, {"--databases=msgq", "--schema_reload_interval=200ms",
                    "--http_listen=", "--listen=" + listen,
                    // One msgqd per shard: no leases, OWNER "off".
                    "--leases=false"});
    ASSERT_TRUE(server.ok()) << server.status();
    shard.server = *std::move(server);
  }

  // Inserts ids [from, to] with message {"shard": "NAME", "n": id}.
  void Insert(Shard& shard, const std::string& name, int from, int to) {
    std::string sql = "INSERT INTO msgq.q (id, message) VALUES ";
    for (int i = from; i <= to; ++i) {
      absl::StrAppend(&sql, i > from ? "," : "", "(", i, ", '{\"shard\": \"",
                      name, "\", \"n\": ", i, "}')");
    }
    ASSERT_TRUE(shard.db->Exec(sql).ok()) << sql;
  }

  static int64_t Int(Shard& shard, const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(shard.db->Scalar(sql), &v)) << sql;
    return v;
  }

  static std::string AckedIds(Shard& shard) {
    return shard.db->Scalar(
        "SELECT IFNULL(GROUP_CONCAT(id ORDER BY id), '') FROM msgq.q WHERE "
        "time_acked IS NOT NULL");
  }

  Shard a_;
  Shard b_;
};

std::string Range(int from, int to, int step = 1) {
  std::string out;
  for (int i = from; i <= to; i += step) {
    absl::StrAppend(&out, out.empty() ? "" : ",", i);
  }
  return out;
}

// Records which server each message came from; acks every message of shard
// a and the even ids of shard b, and hands the odd ids of shard b back for an
// hour: if any ack went to the wrong shard, an odd id of b would be acked or
// an even one left unacked.
class Recorder {
 public:
  Recorder(std::string a, std::string b) : a_(std::move(a)), b_(std::move(b)) {}

  HandlerResult Handle(const Message& message) {
    const std::string body(message.Get("message").value_or(""));
    int64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(message.id(), &id));
    absl::MutexLock lock(&mu_);
    ++seen_[message.server()];
    // The body says which shard the row lives in.
    const bool from_a = body.find("\"shard\": \"a\"") != std::string::npos;
    if (message.server() != (from_a ? a_ : b_)) ++misrouted_;
    if (!from_a && id % 2 == 1) {
      return HandlerResult::RetryAfter(absl::Hours(1), "odd id of shard b");
    }
    return HandlerResult::Ack();
  }

  int64_t seen(const std::string& server) {
    absl::MutexLock lock(&mu_);
    return seen_[server];
  }
  int64_t misrouted() {
    absl::MutexLock lock(&mu_);
    return misrouted_;
  }

 private:
  const std::string a_;
  const std::string b_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> seen_ ABSL_GUARDED_BY(mu_);
  int64_t misrouted_ ABSL_GUARDED_BY(mu_) = 0;
};

// One subscriber on both shards receives all 2N messages (N from each, ids
// 1..N on both) and settles each on its own shard: shard a has every row
// acked; shard b exactly its even ids (its odd ids were nacked with a
// one-hour delay, so they stay unacked).
TEST_F(ShardsTest, SubscriberAcksEachMessageOnItsOwnShard) {
  ASSERT_NO_FATAL_FAILURE(Insert(a_, "a", 1, kRows));
  ASSERT_NO_FATAL_FAILURE(Insert(b_, "b", 1, kRows));
  const std::string a = a_.server->address();
  const std::string b = b_.server->address();
  Recorder recorder(a, b);
  auto subscriber = Subscriber::Start(
      ChannelsTo({a, b}), TableRef("msgq", "q"),
      [&](const Message& m) { return recorder.Handle(m); },
      SubscriberOptions{.concurrency = 4, .jitter_seed = 7});
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  ASSERT_TRUE(Eventually(
      [&] {
        const Subscriber::Stats s = (*subscriber)->stats();
        return s.acked == kRows + kRows / 2 && s.retried == kRows / 2;
      },
      absl::Seconds(30)))
      << "acked " << (*subscriber)->stats().acked;
  (*subscriber)->Stop();
  const Subscriber::Stats stats = (*subscriber)->stats();
  EXPECT_EQ(stats.received, 2 * kRows);
  EXPECT_EQ(stats.handled, kRows + kRows / 2);
  EXPECT_EQ(stats.failed, kRows / 2);
  EXPECT_EQ(stats.acked, kRows + kRows / 2);
  EXPECT_EQ(stats.retried, kRows / 2);
  EXPECT_EQ(stats.streams_started, 2);
  EXPECT_EQ(recorder.seen(a), kRows);
  EXPECT_EQ(recorder.seen(b), kRows);
  EXPECT_EQ(recorder.misrouted(), 0);
  EXPECT_EQ(AckedIds(a_), Range(1, kRows));
  EXPECT_EQ(AckedIds(b_), Range(2, kRows, 2));
  EXPECT_EQ(Int(b_, "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"),
            kRows / 2);
}

// Shard b's msgqd stops (SIGTERM) while subscribed: messages of shard a keep
// arriving and are acked; msgqd b starts again on the same address and the
// same subscriber reconnects to it and drains what was inserted meanwhile.
TEST_F(ShardsTest, SubscriberSurvivesOneServerRestart) {
  const std::string a = a_.server->address();
  const std::string b = b_.server->address();
  absl::Mutex mu;
  int64_t acked_a = 0, acked_b = 0;
  auto subscriber = Subscriber::Start(
      ChannelsTo({a, b}), TableRef("msgq", "q"),
      [&](const Message& m) {
        absl::MutexLock lock(&mu);
        ++(m.server() == a ? acked_a : acked_b);
        return HandlerResult::Ack();
      },
      SubscriberOptions{.concurrency = 2,
                        .backoff = {.initial = absl::Milliseconds(50),
                                    .max = absl::Milliseconds(500)},
                        .jitter_seed = 11});
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  ASSERT_NO_FATAL_FAILURE(Insert(a_, "a", 1, 5));
  ASSERT_NO_FATAL_FAILURE(Insert(b_, "b", 1, 5));
  auto count = [&](int64_t& n) {
    absl::MutexLock lock(&mu);
    return n;
  };
  ASSERT_TRUE(
      Eventually([&] { return count(acked_a) == 5 && count(acked_b) == 5; },
                 absl::Seconds(30)));

  // The acks are batched: let them reach shard b before it stops (an ack
  // lost with the server would bring its message back after ack_wait).
  auto acked_rows = [&](Shard& shard) {
    return Int(shard,
               "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT "
               "NULL");
  };
  ASSERT_TRUE(
      Eventually([&] { return acked_rows(b_) == 5; }, absl::Seconds(10)));
  EXPECT_EQ(b_.server->Terminate(), 0);
  b_.server.reset();
  ASSERT_NO_FATAL_FAILURE(Insert(a_, "a", 6, 10));
  ASSERT_NO_FATAL_FAILURE(Insert(b_, "b", 6, 10));
  ASSERT_TRUE(
      Eventually([&] { return count(acked_a) == 10; }, absl::Seconds(30)));
  EXPECT_EQ(count(acked_b), 5);
  EXPECT_FALSE((*subscriber)->done());

  ASSERT_NO_FATAL_FAILURE(StartServer(b_, b));
  ASSERT_EQ(b_.server->address(), b);
  ASSERT_TRUE(
      Eventually([&] { return count(acked_b) == 10; }, absl::Seconds(60)));
  ASSERT_TRUE(Eventually(
      [&] {
        return Int(a_,
                   "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT "
                   "NULL") == 10 &&
               Int(b_,
                   "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT "
                   "NULL") == 10;
      },
      absl::Seconds(10)));
  (*subscriber)->Stop();
  EXPECT_TRUE((*subscriber)->Wait().ok());
  EXPECT_EQ((*subscriber)->stats().received, 20);
  EXPECT_GE((*subscriber)->stats().reconnects, 1);
}

// Runs `program` with `args` (and `env` assignments) under a 60 s timeout;
// returns its exit code and fills `out`/`err`.
int RunProgram(const std::string& program, const std::vector<std::string>& args,
               std::string* out, std::string* err,
               const std::string& env = "") {
  std::string command = absl::StrCat("env -u MSGQ_SERVER ", env,
                                     " timeout --kill-after=5 60 ", program);
  for (const std::string& a : args) absl::StrAppend(&command, " '", a, "'");
  char err_path[] = "/tmp/msgq-test-shards-err-XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  absl::StrAppend(&command, " </dev/null 2>", err_path);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out->append(buf, n);
  const int status = pclose(pipe);
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  *err = ss.str();
  unlink(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int RunCli(const std::vector<std::string>& args, std::string* out,
           std::string* err) {
  return RunProgram(MSGQ_CLI_PATH, args, out, err);
}

// `msgq tables --server=A,B` prints one row per (server, table) with SERVER
// and OWNER columns (one msgqd per shard with --leases=false: "off", no
// holder); the id-taking commands refuse a list (exit 2) because ids are unique
// only per shard; and `msgq tail --server=A,B --ack --count=4` prints the
// messages of both shards, each with its server, and acks each on its own
// shard; then `msgq stats --json` reports sent 2 and acked 2 for each server.
TEST_F(ShardsTest, CliTablesAndTailAcrossServers) {
  const std::string a = a_.server->address();
  const std::string b = b_.server->address();
  ASSERT_TRUE(Eventually(
      [&] {
        // The dead count is known once the exact counts are loaded.
        const v1::TableStatus ta = FindTable(a_.server->Stub().get(), "q");
        const v1::TableStatus tb = FindTable(b_.server->Stub().get(), "q");
        return ta.discovery() == "binlog" && ta.dead() == 0 &&
               tb.discovery() == "binlog" && tb.dead() == 0;
      },
      absl::Seconds(20)));
  std::string out, err;
  ASSERT_EQ(RunCli({"tables", "--server=" + a + "," + b}, &out, &err), 0)
      << err;
  EXPECT_EQ(err, "");
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << out;
  const size_t width = std::max(a.size(), b.size());
  auto cell = [&](const std::string& text) {
    return text + std::string(width - text.size() + 2, ' ');
  };
  const std::string rest =
      "msgq      q     loaded  off    binlog     0            0       0       "
      "   0     ack_wait=30s purge_after=86400s batch_size=10 "
      "cache_size=10000 poller_interval=30s min_backoff=30s";
  EXPECT_EQ(lines[0], cell("SERVER") +
                          "KEYSPACE  NAME  STATUS  OWNER  DISCOVERY  "
                          "SUBSCRIBERS  CACHED  IN_FLIGHT  DEAD  DETAILS");
  EXPECT_EQ(lines[1], cell(a) + rest);
  EXPECT_EQ(lines[2], cell(b) + rest);

  for (const char* command : {"ack", "redrive"}) {
    EXPECT_EQ(
        RunCli({command, "q", "1", "--server=" + a + "," + b}, &out, &err), 2);
    EXPECT_THAT(err,
                ::testing::HasSubstr("ids are unique only within a shard"));
  }

  ASSERT_NO_FATAL_FAILURE(Insert(a_, "a", 1, 2));
  ASSERT_NO_FATAL_FAILURE(Insert(b_, "b", 1, 2));
  ASSERT_EQ(
      RunCli({"tail", "q", "--ack", "--count=4", "--server=" + a + "," + b},
             &out, &err),
      0)
      << err;
  std::vector<std::string> tail = absl::StrSplit(out, '\n', absl::SkipEmpty());
  std::sort(tail.begin(), tail.end());
  EXPECT_THAT(
      tail,
      ::testing::ElementsAre(
          "id=1 message=\"{\\\"shard\\\": \\\"a\\\", \\\"n\\\": 1}\" server=" +
              a,
          "id=1 message=\"{\\\"shard\\\": \\\"b\\\", \\\"n\\\": 1}\" server=" +
              b,
          "id=2 message=\"{\\\"shard\\\": \\\"a\\\", \\\"n\\\": 2}\" server=" +
              a,
          "id=2 message=\"{\\\"shard\\\": \\\"b\\\", \\\"n\\\": 2}\" server=" +
              b));
  EXPECT_EQ(AckedIds(a_), "1,2");
  EXPECT_EQ(AckedIds(b_), "1,2");

  // `msgq stats --json` on both: one line, a row per server with the
  // counters of that workload (2 sent and 2 acked on each shard).
  ASSERT_EQ(RunCli({"stats", "q", "--json", "--interval=200ms",
                    "--server=" + a + "," + b},
                   &out, &err),
            0)
      << err;
  EXPECT_EQ(err, "");
  std::vector<std::string> samples =
      absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(samples.size(), 1u) << out;
  for (const std::string& server : {a, b}) {
    EXPECT_THAT(samples[0],
                ::testing::HasSubstr(absl::StrCat(
                    "{\"server\":\"", server,
                    "\",\"keyspace\":\"msgq\",\"name\":\"q\",\"sent\":2,"
                    "\"acked\":2,\"redelivered\":0,\"nacked\":0,\"died\":0,"
                    "\"sent_per_s\":0.0,\"acked_per_s\":0.0,"
                    "\"redelivered_per_s\":0.0,\"nacked_per_s\":0.0,"
                    "\"died_per_s\":0.0,\"cached\":0,\"in_flight\":0,")));
  }
}

// `python3 -m msgq` --server=A,B --count 4 prints the 4 messages of both
// shards (ids 1 and 2 on each) and acks each on its own shard.
TEST_F(ShardsTest, PythonConsumerAcrossServers) {
  const std::string a = a_.server->address();
  const std::string b = b_.server->address();
  ASSERT_NO_FATAL_FAILURE(Insert(a_, "a", 1, 2));
  ASSERT_NO_FATAL_FAILURE(Insert(b_, "b", 1, 2));
  std::string out, err;
  ASSERT_EQ(
      RunProgram(
          "/usr/bin/python3",
          {"-m", "msgq", "--server", a + "," + b, "--count", "4", "q"}, &out,
          &err,
          absl::StrCat("PYTHONPATH=", MSGQ_PYTHON_STUBS, ":", MSGQ_SOURCE_DIR,
                       "/client/python", " PYTHONDONTWRITEBYTECODE=1")),
      0)
      << err;
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  std::sort(lines.begin(), lines.end());
  auto line = [](const char* shard, int id) {
    return absl::StrCat("{\"id\":", id, ",\"message\":\"{\\\"shard\\\": \\\"",
                        shard, "\\\", \\\"n\\\": ", id, "}\"}");
  };
  EXPECT_THAT(lines, ::testing::ElementsAre(line("a", 1), line("b", 1),
                                            line("a", 2), line("b", 2)))
      << err;
  EXPECT_EQ(AckedIds(a_), "1,2");
  EXPECT_EQ(AckedIds(b_), "1,2");
}

}  // namespace
}  // namespace msgq::testing
