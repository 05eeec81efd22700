// Tests of msgq::Inbox (docs/effectively-once.md) against real MariaDB servers:
// the helper alone on the consumer's MariaDB (once per id, rollbacks, a failed
// commit, the missing-grant error, purge), then through a real msgqd (on a
// second MariaDB) with consumer processes (msgq_inbox_test_consumer): two
// consumers on one redelivered message, and the kill campaign.
//
// MSGQD overrides the msgqd binary; MSGQ_INBOX_SEED=N replays a campaign.
#include "msgq/inbox.h"

#include <mysql.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/internal/decode_row.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "msgq/message.h"
#include "tools/launch/child_process.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/owned_dir.h"
#include "tools/launch/private_mariadb.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string MsgqdPath() {
  const char* env = std::getenv("MSGQD");
  return env != nullptr && *env != '\0' ? env : MSGQ_MSGQD_PATH;
}

// A connection of the test's own (root over a socket); fails the test on
// any error.
class Sql {
 public:
  explicit Sql(const std::string& socket, const std::string& db = "") {
    mysql_ = mysql_init(nullptr);
    unsigned int protocol = MYSQL_PROTOCOL_SOCKET;
    mysql_optionsv(mysql_, MYSQL_OPT_PROTOCOL, &protocol);
    if (mysql_real_connect(mysql_, "localhost", "root", "",
                           db.empty() ? nullptr : db.c_str(), 0, socket.c_str(),
                           0) == nullptr) {
      ADD_FAILURE() << "connect " << socket << ": " << mysql_error(mysql_);
    }
  }
  ~Sql() { mysql_close(mysql_); }

  // The rows of `sql` (NULL as "NULL"); none for a statement without.
  std::vector<std::vector<std::string>> Rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
      ADD_FAILURE() << sql << ": " << mysql_error(mysql_);
      return out;
    }
    MYSQL_RES* res = mysql_store_result(mysql_);
    if (res == nullptr) return out;
    const unsigned int n = mysql_num_fields(res);
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
      const unsigned long* len = mysql_fetch_lengths(res);
      std::vector<std::string>& r = out.emplace_back();
      for (unsigned int i = 0; i < n; ++i) {
        r.push_back(row[i] == nullptr ? "NULL" : std::string(row[i], len[i]));
      }
    }
    mysql_free_result(res);
    return out;
  }
  void Exec(const std::string& sql) { Rows(sql); }
  int64_t Int(const std::string& sql) {
    std::vector<std::vector<std::string>> rows = Rows(sql);
    int64_t v = -1;
    if (rows.size() != 1 || rows[0].size() != 1 ||
        !absl::SimpleAtoi(rows[0][0], &v)) {
      ADD_FAILURE() << sql << ": not one number";
    }
    return v;
  }
  // "1:970,2:30"-style text of a two-column query.
  std::string Pairs(const std::string& sql) {
    std::vector<std::string> parts;
    for (const auto& r : Rows(sql)) parts.push_back(absl::StrJoin(r, ":"));
    return absl::StrJoin(parts, ",");
  }

 private:
  MYSQL* mysql_;
};

std::unique_ptr<launch::OwnedDir> MakeDir(const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
      launch::OwnedDir::Create(absl::StrCat("msgq-test-inbox-", prefix));
  EXPECT_TRUE(dir.ok()) << dir.status();
  return dir.ok() ? *std::move(dir) : nullptr;
}

std::unique_ptr<launch::PrivateMariaDb> StartDb(const std::string& dir) {
  launch::PrivateMariaDb::Options o;
  o.source_dir = MSGQ_SOURCE_DIR;
  o.dir = dir;
  o.durable = false;
  absl::StatusOr<std::unique_ptr<launch::PrivateMariaDb>> db =
      launch::PrivateMariaDb::Start(o);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

// The bank: accounts 1 (opening) and 2 (0), and applied (one row per
// message applied, with a counter: above 1 is a message applied twice).
void CreateBank(Sql& root, int64_t opening) {
  root.Exec("DROP DATABASE IF EXISTS bank");
  root.Exec("CREATE DATABASE bank");
  root.Exec(
      "CREATE TABLE bank.accounts (id int PRIMARY KEY, balance bigint NOT "
      "NULL)");
  root.Exec(
      "CREATE TABLE bank.applied (message_id bigint PRIMARY KEY, times int "
      "NOT NULL)");
  root.Exec(absl::StrCat("INSERT INTO bank.accounts VALUES (1, ", opening,
                         "), (2, 0)"));
}

Message TransferMessage(int id, int amount) {
  auto schema = Schema::FromColumns({{"id", "bigint"}, {"message", "json"}});
  const std::string sid = absl::StrCat(id);
  const std::string body =
      absl::StrCat("{\"from\": 1, \"to\": 2, \"amount\": ", amount, "}");
  v1::Row row;
  row.add_lengths(static_cast<int64_t>(sid.size()));
  row.add_lengths(static_cast<int64_t>(body.size()));
  row.set_values(sid + body);
  return *DecodeRow(*schema, row);
}

// The consumer's work: moves the amount from 1 to 2, counts it in applied.
HandlerResult Transfer(const Message& m, InboxTransaction& tx) {
  std::string body(m.Get("message").value_or(""));
  const size_t at = body.find("\"amount\": ");
  int64_t amount = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtoi(body.substr(at + 10, body.find('}') - at - 10),
                        &amount)) {
    return HandlerResult::Dead("bad transfer");
  }
  for (const std::string& sql :
       {absl::StrCat("UPDATE accounts SET balance = balance - ", amount,
                     " WHERE id = 1"),
        absl::StrCat("UPDATE accounts SET balance = balance + ", amount,
                     " WHERE id = 2"),
        absl::StrCat("INSERT INTO applied VALUES (", tx.Quote(m.id()),
                     ", 1) ON DUPLICATE KEY UPDATE times = times + 1")}) {
    if (absl::StatusOr<uint64_t> r = tx.Execute(sql); !r.ok()) {
      return r.status();
    }
  }
  return HandlerResult::Ack();
}

class InboxTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = MakeDir("db").release();
    if (dir_ != nullptr) db_ = StartDb(dir_->path()).release();
  }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(db_, nullptr);
    root_ = std::make_unique<Sql>(db_->socket());
    CreateBank(*root_, 1000);
    bank_ = std::make_unique<Sql>(db_->socket(), "bank");
    inbox_ = MakeInbox("test");
  }

  std::unique_ptr<Inbox> MakeInbox(const std::string& source,
                                   InboxOptions o = {}) {
    o.connection.unix_socket = db_->socket();
    if (o.connection.user.empty()) o.connection.user = "root";
    o.connection.database = "bank";
    o.source = source;
    o.log = [](absl::string_view) {};
    absl::StatusOr<std::unique_ptr<Inbox>> inbox = Inbox::Create(std::move(o));
    EXPECT_TRUE(inbox.ok()) << inbox.status();
    return inbox.ok() ? *std::move(inbox) : nullptr;
  }

  InboxWork Counting(InboxWork work) {
    return [this, work](const Message& m, InboxTransaction& tx) {
      ++runs_;
      return work(m, tx);
    };
  }

  std::string Balances() {
    return bank_->Pairs("SELECT id, balance FROM accounts ORDER BY id");
  }
  std::string InboxIds() {
    std::vector<std::string> ids;
    for (const auto& r : bank_->Rows(
             "SELECT message_id FROM msgq_inbox ORDER BY CAST(message_id AS "
             "UNSIGNED)")) {
      ids.push_back(r[0]);
    }
    return absl::StrJoin(ids, ",");
  }

  static launch::OwnedDir* dir_;
  static launch::PrivateMariaDb* db_;
  std::unique_ptr<Sql> root_;
  std::unique_ptr<Sql> bank_;
  std::unique_ptr<Inbox> inbox_;
  int runs_ = 0;
};

launch::OwnedDir* InboxTest::dir_ = nullptr;
launch::PrivateMariaDb* InboxTest::db_ = nullptr;

TEST_F(InboxTest, RunsOncePerIdAndAcksDuplicates) {
  auto handler = inbox_->Handler({"msgq", "transfers"}, Counting(Transfer));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(handler(TransferMessage(7, 30)), HandlerResult::Ack());
  }
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(inbox_->stats().processed, 1);
  EXPECT_EQ(inbox_->stats().duplicates, 2);
  EXPECT_EQ(Balances(), "1:970,2:30");
  EXPECT_EQ(bank_->Rows("SELECT source, keyspace, table_name, message_id "
                        "FROM msgq_inbox"),
            (std::vector<std::vector<std::string>>{
                {"test", "msgq", "transfers", "7"}}));
  // The key includes the source, the keyspace and the table.
  std::unique_ptr<Inbox> other = MakeInbox("other");
  EXPECT_EQ(other->Handler({"msgq", "transfers"},
                           Counting(Transfer))(TransferMessage(7, 30)),
            HandlerResult::Ack());
  EXPECT_EQ(inbox_->Handler({"msgq", "refunds"},
                            Counting(Transfer))(TransferMessage(7, 30)),
            HandlerResult::Ack());
  EXPECT_EQ(
      inbox_->Handler("transfers", Counting(Transfer))(TransferMessage(7, 30)),
      HandlerResult::Ack());
  EXPECT_EQ(runs_, 4);
}

TEST_F(InboxTest, FailedWorkRollsBackWithItsRow) {
  for (const HandlerResult& want :
       {HandlerResult(absl::UnavailableError("backend down")),
        HandlerResult::RetryAfter(absl::Seconds(5), "later"),
        HandlerResult::Dead("bad")}) {
    auto handler = inbox_->Handler(
        "t", Counting([&want](const Message& m, InboxTransaction& tx) {
          EXPECT_EQ(Transfer(m, tx), HandlerResult::Ack());
          return want;
        }));
    EXPECT_EQ(handler(TransferMessage(1, 5)), want);
  }
  EXPECT_EQ(Balances(), "1:1000,2:0");
  EXPECT_EQ(InboxIds(), "");
  EXPECT_EQ(inbox_->Handler("t", Counting(Transfer))(TransferMessage(1, 5)),
            HandlerResult::Ack());
  EXPECT_EQ(runs_, 4);
  EXPECT_EQ(Balances(), "1:995,2:5");
  EXPECT_EQ(InboxIds(), "1");
}

TEST_F(InboxTest, WorkErrorsCarryCodes) {
  auto handler = inbox_->Handler("t", [](const Message&, InboxTransaction& tx) {
    absl::StatusOr<uint64_t> r = tx.Execute("INSERT INTO nowhere VALUES (1)");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(r.status().message(), HasSubstr("MySQL error 1146"));
    absl::StatusOr<uint64_t> dup =
        tx.Execute("INSERT INTO accounts VALUES (1, 0)");
    EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
    absl::StatusOr<InboxRows> rows =
        tx.Query("SELECT balance, NULL FROM accounts WHERE id = 1");
    EXPECT_TRUE(rows.ok()) << rows.status();
    EXPECT_EQ(*rows, (InboxRows{{"1000", std::nullopt}}));
    EXPECT_EQ(tx.Quote("it's"), "'it\\'s'");
    return HandlerResult::Ack();
  });
  EXPECT_EQ(handler(TransferMessage(4, 1)), HandlerResult::Ack());
  EXPECT_EQ(InboxIds(), "4");
}

TEST_F(InboxTest, FailedCommitRollsBackAndRecovers) {
  auto lose_connection = [this](const Message& m, InboxTransaction& tx) {
    EXPECT_EQ(Transfer(m, tx), HandlerResult::Ack());
    absl::StatusOr<InboxRows> id = tx.Query("SELECT CONNECTION_ID()");
    EXPECT_TRUE(id.ok());
    root_->Exec(absl::StrCat("KILL ", *(*id)[0][0]));  // the commit will fail
    return HandlerResult::Ack();
  };
  HandlerResult r =
      inbox_->Handler("t", lose_connection)(TransferMessage(2, 9));
  EXPECT_EQ(r.kind(), HandlerResult::Kind::kRetry);
  EXPECT_EQ(r.delay(), std::nullopt);  // the table's backoff
  EXPECT_THAT(r.reason(), HasSubstr("inbox: MySQL error"));
  EXPECT_EQ(Balances(), "1:1000,2:0");
  EXPECT_EQ(InboxIds(), "");
  EXPECT_EQ(inbox_->stats().processed, 0);
  // The next message gets a new connection.
  EXPECT_EQ(inbox_->Handler("t", Transfer)(TransferMessage(2, 9)),
            HandlerResult::Ack());
  EXPECT_EQ(Balances(), "1:991,2:9");
}

TEST_F(InboxTest, MissingCreateGrantIsNamed) {
  root_->Exec(
      "CREATE USER IF NOT EXISTS 'nocreate'@'localhost' "
      "IDENTIFIED BY 'pw'");
  root_->Exec(
      "GRANT SELECT, INSERT, UPDATE, DELETE ON bank.* TO "
      "'nocreate'@'localhost'");
  InboxOptions o;
  o.connection.user = "nocreate";
  o.connection.password = "pw";
  std::unique_ptr<Inbox> limited = MakeInbox("test", o);
  absl::Status s = limited->EnsureTable();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("GRANT CREATE"));
  EXPECT_THAT(s.message(), HasSubstr("schema/msgq_inbox.sql"));
  HandlerResult r =
      limited->Handler("t", Counting(Transfer))(TransferMessage(3, 1));
  EXPECT_EQ(r.kind(), HandlerResult::Kind::kRetry);
  EXPECT_THAT(r.reason(), HasSubstr("GRANT CREATE"));
  EXPECT_EQ(runs_, 0);
  // Created by someone who may, the table works for the user without CREATE.
  EXPECT_TRUE(inbox_->EnsureTable().ok());
  EXPECT_EQ(limited->Handler("t", Counting(Transfer))(TransferMessage(3, 1)),
            HandlerResult::Ack());
  EXPECT_EQ(runs_, 1);
}

TEST_F(InboxTest, NoCreateAndBadOptions) {
  root_->Exec("DROP TABLE IF EXISTS bank.msgq_inbox");
  InboxOptions o;
  o.create = false;
  o.inbox_table = "my_inbox";
  absl::Status s = MakeInbox("test", o)->EnsureTable();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("inbox table my_inbox does not exist"));
  EXPECT_EQ(Inbox::Create({.source = "s", .inbox_table = "x; DROP TABLE y"})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Inbox::Create({.source = ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Inbox::Create({.source = std::string(65, 's')}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A database that cannot be reached: a retry, the work not run.
  InboxOptions gone;
  gone.connection.unix_socket = "/nonexistent/mysqld.sock";
  gone.source = "test";
  gone.log = [](absl::string_view) {};
  std::unique_ptr<Inbox> unreachable = *Inbox::Create(gone);
  EXPECT_EQ(unreachable->EnsureTable().code(), absl::StatusCode::kUnavailable);
  HandlerResult r =
      unreachable->Handler("t", Counting(Transfer))(TransferMessage(1, 1));
  EXPECT_EQ(r.kind(), HandlerResult::Kind::kRetry);
  EXPECT_THAT(r.reason(), HasSubstr("inbox: cannot connect"));
  EXPECT_EQ(runs_, 0);
}

// The table the helper creates is schema/msgq_inbox.sql's.
TEST_F(InboxTest, CreatesTheTableOfTheSchemaFile) {
  ASSERT_TRUE(inbox_->EnsureTable().ok());
  std::ifstream in(std::string(MSGQ_SOURCE_DIR) + "/schema/msgq_inbox.sql");
  std::stringstream ddl;
  ddl << in.rdbuf();
  root_->Exec("DROP DATABASE IF EXISTS schema_file");
  root_->Exec("CREATE DATABASE schema_file");
  Sql schema_file(db_->socket(), "schema_file");
  schema_file.Exec(ddl.str());
  EXPECT_EQ(bank_->Rows("SHOW CREATE TABLE msgq_inbox"),
            schema_file.Rows("SHOW CREATE TABLE msgq_inbox"));
}

TEST_F(InboxTest, PurgesAfterRetentionAndNotBefore) {
  auto handler = inbox_->Handler("t", Counting(Transfer));
  for (int i = 1; i <= 25; ++i) {
    ASSERT_EQ(handler(TransferMessage(i, 1)), HandlerResult::Ack());
  }
  // Ages by the database's clock: 1..10 processed 100 s ago, 11..15 50 s
  // ago, 16..25 now.
  bank_->Exec(
      "UPDATE msgq_inbox SET processed_at = NOW(6) - INTERVAL 100 "
      "SECOND WHERE CAST(message_id AS UNSIGNED) <= 10");
  bank_->Exec(
      "UPDATE msgq_inbox SET processed_at = NOW(6) - INTERVAL 50 "
      "SECOND WHERE CAST(message_id AS UNSIGNED) BETWEEN 11 AND 15");
  EXPECT_EQ(*inbox_->Purge(absl::Seconds(200)), 0);
  EXPECT_EQ(bank_->Int("SELECT COUNT(*) FROM msgq_inbox"), 25);
  // Batches of 3: 10 rows take 4 statements.
  EXPECT_EQ(*inbox_->Purge(absl::Seconds(60), {.batch = 3}), 10);
  EXPECT_EQ(InboxIds(), "11,12,13,14,15,16,17,18,19,20,21,22,23,24,25");
  EXPECT_EQ(*inbox_->Purge(absl::Seconds(60), {.batch = 3}), 0);
  EXPECT_EQ(*inbox_->Purge(absl::Seconds(40)), 5);
  EXPECT_EQ(InboxIds(), "16,17,18,19,20,21,22,23,24,25");
  EXPECT_EQ(inbox_->Purge(absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(inbox_->Purge(absl::Seconds(1), {.batch = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A purged id is processed again if it ever came back: why the retention
  // must exceed the longest redelivery.
  EXPECT_EQ(handler(TransferMessage(1, 1)), HandlerResult::Ack());
  EXPECT_EQ(runs_, 26);
}

// -- Through msgqd, with consumer processes -----------------------------

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

using Events = std::vector<std::pair<std::string, std::string>>;

Events ReadEvents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  Events out;
  std::string text = ss.str();
  // A torn last line (killed mid-write: no newline) is not an event.
  text.erase(text.find_last_of('\n') == std::string::npos
                 ? 0
                 : text.find_last_of('\n') + 1);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() == 2) out.emplace_back(f[0], f[1]);
  }
  return out;
}

bool HasEvent(const std::string& path, const std::string& what,
              const std::string& id) {
  for (const auto& e : ReadEvents(path)) {
    if (e.first == what && e.second == id) return true;
  }
  return false;
}

template <typename F>
bool Eventually(F predicate, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (predicate()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return predicate();
}

class InboxProcessTest : public ::testing::Test {
 protected:
  struct ConsumerArgs {
    double crash_after_commit = 0;
    uint64_t seed = 0;
    int work_delay_ms = 0;
    std::string hold_file;
    bool leave = false;
  };

  void SetUp() override {
    msgq_dir_ = MakeDir("msgq");
    bank_dir_ = MakeDir("bank");
    tmp_ = MakeDir("run");
    ASSERT_TRUE(msgq_dir_ && bank_dir_ && tmp_);
    msgq_db_ = StartDb(msgq_dir_->path());
    bank_db_ = StartDb(bank_dir_->path());
    ASSERT_TRUE(msgq_db_ && bank_db_);
    msgq_sql_ = std::make_unique<Sql>(msgq_db_->socket());
    Sql bank_root(bank_db_->socket());
    CreateBank(bank_root, kOpening);
    bank_ = std::make_unique<Sql>(bank_db_->socket(), "bank");
    msgq_sql_->Exec("CREATE DATABASE msgq");
    port_ = FreePort();
  }

  void TearDown() override {
    for (auto& c : consumers_) c->Stop(SIGKILL, absl::Seconds(5));
    if (server_) server_->Kill();
  }

  // Small batches, a 1 s ack wait and a 2 s cap on the backoff, so that
  // redeliveries come quickly.
  void CreateTable(const std::string& extra = "") {
    msgq_sql_->Exec(absl::StrCat(
        "CREATE TABLE msgq.transfers (id bigint NOT NULL, priority tinyint "
        "NOT NULL DEFAULT 50, epoch bigint NOT NULL DEFAULT 0, time_next "
        "bigint DEFAULT 0, time_acked bigint DEFAULT NULL, message json, "
        "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, "
        "time_next)) COMMENT 'vitess_message,vt_ack_wait=1,"
        "vt_purge_after=86400,vt_batch_size=5,vt_cache_size=10000,"
        "vt_poller_interval=1",
        extra, "'"));
  }

  void InsertTransfers(int from, int to) {
    std::vector<std::string> values;
    for (int i = from; i <= to; ++i) {
      values.push_back(absl::StrCat("(", i, ", '{\"from\": 1, \"to\": 2, ",
                                    "\"amount\": ", i, "}')"));
    }
    msgq_sql_->Exec(
        absl::StrCat("INSERT INTO msgq.transfers (id, message) "
                     "VALUES ",
                     absl::StrJoin(values, ",")));
  }

  // Starts msgqd on port_ (the same address after a restart: the port may
  // take a moment to be free again).
  void StartMsgqd() {
    launch::MsgqdProcess::Options o;
    o.path = MsgqdPath();
    o.mysql_socket = msgq_db_->socket();
    o.args = {absl::StrCat("--listen=127.0.0.1:", port_), "--databases=msgq",
              "--schema_reload_interval=200ms"};
    o.log_path = tmp_->path() + "/msgqd.log";
    for (int attempt = 0;; ++attempt) {
      absl::StatusOr<std::unique_ptr<launch::MsgqdProcess>> p =
          launch::MsgqdProcess::Start(o);
      if (p.ok()) {
        server_ = *std::move(p);
        return;
      }
      if (attempt == 20) {
        FAIL() << p.status();
      }
      absl::SleepFor(absl::Milliseconds(250));
    }
  }

  // Starts a consumer process; returns its events file.
  std::string StartConsumer(const ConsumerArgs& a) {
    const std::string events =
        absl::StrCat(tmp_->path(), "/c", consumers_.size() + 1, ".events");
    std::vector<std::string> argv = {
        MSGQ_INBOX_CONSUMER_PATH,
        absl::StrCat("--msgqd=127.0.0.1:", port_),
        "--keyspace=msgq",
        "--table=transfers",
        "--socket=" + bank_db_->socket(),
        "--database=bank",
        "--events=" + events,
        absl::StrCat("--crash_after_commit=", a.crash_after_commit),
        absl::StrCat("--seed=", a.seed),
        absl::StrCat("--work_delay_ms=", a.work_delay_ms)};
    if (!a.hold_file.empty()) argv.push_back("--hold_file=" + a.hold_file);
    if (a.leave) argv.push_back("--leave");
    absl::StatusOr<std::unique_ptr<launch::ChildProcess>> child =
        launch::ChildProcess::Start(argv, events + ".log");
    EXPECT_TRUE(child.ok()) << child.status();
    if (child.ok()) consumers_.push_back(*std::move(child));
    return events;
  }

  int64_t Acked() {
    return msgq_sql_->Int(
        "SELECT COUNT(*) FROM msgq.transfers WHERE time_acked IS NOT NULL");
  }

  // Every consumer's events and log, and msgqd's log, for a failure.
  std::string Logs() {
    std::string out;
    for (size_t i = 1; i <= consumers_.size(); ++i) {
      for (const char* ext : {".events", ".events.log"}) {
        std::ifstream in(absl::StrCat(tmp_->path(), "/c", i, ext));
        std::stringstream ss;
        ss << in.rdbuf();
        absl::StrAppend(
            &out, "--- c", i, ext, "\n",
            ss.str().substr(ss.str().size() > 2000 ? ss.str().size() - 2000
                                                   : 0),
            "\n");
      }
    }
    if (server_) absl::StrAppend(&out, "--- msgqd\n", server_->Log());
    return out;
  }

  static constexpr int64_t kOpening = 1000000;
  std::unique_ptr<launch::OwnedDir> msgq_dir_, bank_dir_, tmp_;
  std::unique_ptr<launch::PrivateMariaDb> msgq_db_, bank_db_;
  std::unique_ptr<Sql> msgq_sql_, bank_;
  std::unique_ptr<launch::MsgqdProcess> server_;
  std::vector<std::unique_ptr<launch::ChildProcess>> consumers_;
  int port_ = 0;
};

TEST_F(InboxProcessTest, TwoConsumersOneRedeliveredMessageOneApplies) {
  CreateTable();
  StartMsgqd();
  const std::string hold = tmp_->path() + "/release";
  // A runs the work and holds its transaction open (its inbox row locked),
  // having left msgqd (else msgqd might hand it every resend) and without
  // heartbeats (which would keep the message from being sent again).
  const std::string a = StartConsumer({.hold_file = hold, .leave = true});
  InsertTransfers(1, 1);
  ASSERT_TRUE(
      Eventually([&] { return HasEvent(a, "run", "1"); }, absl::Seconds(20)))
      << Logs();
  const std::string b = StartConsumer({.hold_file = hold});
  // After the ack wait (1 s) the message goes again, to B, whose INSERT
  // waits on A's row lock.
  ASSERT_TRUE(Eventually(
      [&] {
        return bank_->Int(
                   "SELECT COUNT(*) FROM information_schema.processlist "
                   "WHERE command = 'Query' AND info LIKE "
                   "'INSERT INTO `msgq_inbox`%'") == 1;
      },
      absl::Seconds(20)))
      << Logs();
  std::ofstream(hold).close();  // A commits; B gets a duplicate key
  ASSERT_TRUE(
      Eventually([&] { return HasEvent(b, "dup", "1") && Acked() == 1; },
                 absl::Seconds(20)))
      << Logs();
  EXPECT_EQ(ReadEvents(a), (Events{{"run", "1"}, {"commit", "1"}})) << Logs();
  EXPECT_FALSE(HasEvent(b, "run", "1")) << Logs();
  EXPECT_EQ(bank_->Pairs("SELECT id, balance FROM accounts ORDER BY id"),
            "1:999999,2:1");
  EXPECT_EQ(bank_->Pairs("SELECT message_id, times FROM applied"), "1:1");
}

// The kill campaign: two consumer processes at a time move money for each
// of 100 messages while msgqd and consumers are killed with SIGKILL at random
// moments, and consumers SIGKILL themselves right after a commit, before
// its ack. At the end every message was applied exactly once and is acked.
TEST_F(InboxProcessTest, KillCampaignAppliesEachMessageOnceAndAcksAll) {
  constexpr int kMessages = 100;
  constexpr int kKills = 8;
  constexpr double kCrash = 0.2;  // a self-kill right after a commit
  uint64_t seed = absl::ToUnixNanos(absl::Now()) % 100000;
  if (const char* s = std::getenv("MSGQ_INBOX_SEED")) {
    (void)absl::SimpleAtoi(s, &seed);
  }
  std::cout << "MSGQ_INBOX_SEED=" << seed << std::endl;
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  CreateTable(",vt_max_backoff=2");
  StartMsgqd();
  InsertTransfers(1, kMessages);
  // consumers_[live[i]] are the running ones.
  std::vector<size_t> live;
  auto start = [&](double crash) {
    StartConsumer(
        {.crash_after_commit = crash, .seed = rng(), .work_delay_ms = 30});
    return consumers_.size() - 1;
  };
  // The first consumer dies right after its first commit, so the window
  // between commit and ack is hit in every run; the others now and then.
  live.push_back(start(1));
  live.push_back(start(kCrash));
  std::set<size_t> killed;
  std::map<std::string, int> counts;
  const absl::Time began = absl::Now();
  auto commits_so_far = [&] {
    int n = 0;
    for (size_t i = 1; i <= consumers_.size(); ++i) {
      for (const auto& e :
           ReadEvents(absl::StrCat(tmp_->path(), "/c", i, ".events"))) {
        n += e.first == "commit";
      }
    }
    return n;
  };
  auto replace_dead = [&] {
    for (size_t& c : live) {
      if (!consumers_[c]->running()) c = start(kCrash);
    }
  };
  for (int k = 0; k < kKills; ++k) {
    // Each kill waits for some progress (3 more commits, up to 10 s), so
    // that the consumers work between kills however loaded the machine is;
    // the dead are replaced meanwhile.
    const int before = commits_so_far();
    Eventually(
        [&] {
          replace_dead();
          return commits_so_far() >= std::min(kMessages, before + 3);
        },
        absl::Seconds(10));
    absl::SleepFor(absl::Milliseconds(uniform(0, 500)));
    const std::string action = std::vector<std::string>{
        "msgqd", "consumer", "consumer", "both"}[uniform(0, 3)];
    ++counts[action];
    if (action != "msgqd") {
      const size_t victim = live[uniform(0, live.size() - 1)];
      // (One that is gone already crashed by itself.)
      if (consumers_[victim]->running()) killed.insert(victim);
      consumers_[victim]->Stop(SIGKILL, absl::Seconds(5));
    }
    if (action != "consumer") {
      server_->Kill();
      absl::SleepFor(absl::Milliseconds(uniform(0, 300)));
      StartMsgqd();
      ASSERT_NE(server_, nullptr);
    }
    replace_dead();
  }
  absl::SleepFor(absl::Seconds(1));
  for (size_t c : live) {
    killed.insert(c);
    consumers_[c]->Stop(SIGKILL, absl::Seconds(5));
  }
  int self_crashes = 0;
  for (size_t c = 0; c < consumers_.size(); ++c) {
    if (killed.count(c) == 0 && !consumers_[c]->running() &&
        consumers_[c]->Stop(SIGKILL, absl::Seconds(5)) == 128 + SIGKILL) {
      ++self_crashes;
    }
  }
  // Finish with consumers that do not crash.
  for (size_t& c : live) c = start(0);
  ASSERT_TRUE(
      Eventually([&] { return Acked() == kMessages; }, absl::Seconds(60)))
      << "only " << Acked() << " of " << kMessages << " acked\n"
      << Logs();
  int runs = 0, commits = 0, dups = 0;
  for (size_t i = 1; i <= consumers_.size(); ++i) {
    for (const auto& e :
         ReadEvents(absl::StrCat(tmp_->path(), "/c", i, ".events"))) {
      runs += e.first == "run";
      commits += e.first == "commit";
      dups += e.first == "dup";
    }
  }
  std::cout << "campaign: " << kMessages << " messages, kills msgqd "
            << counts["msgqd"] << " consumer " << counts["consumer"] << " both "
            << counts["both"] << ", " << consumers_.size()
            << " consumers started, " << self_crashes
            << " crashes right after a commit, work runs " << runs
            << ", commits " << commits << ", duplicates acked " << dups << ", "
            << absl::ToDoubleSeconds(absl::Now() - began) << " s" << std::endl;
  // Exactly once: each message applied once, the balances add up.
  std::vector<std::string> want;
  for (int i = 1; i <= kMessages; ++i) want.push_back(absl::StrCat(i, ":1"));
  EXPECT_EQ(bank_->Pairs("SELECT message_id, times FROM applied ORDER BY "
                         "message_id"),
            absl::StrJoin(want, ","));
  constexpr int64_t kTotal = kMessages * (kMessages + 1) / 2;
  EXPECT_EQ(bank_->Pairs("SELECT id, balance FROM accounts ORDER BY id"),
            absl::StrCat("1:", kOpening - kTotal, ",2:", kTotal));
  // (A kill between the COMMIT and the "commit" line loses the line.)
  EXPECT_LE(commits, kMessages);
  EXPECT_EQ(bank_->Int("SELECT COUNT(*) FROM msgq_inbox"), kMessages);
  EXPECT_EQ(Acked(), kMessages);
  // The campaign hit the window between commit and ack.
  EXPECT_GT(self_crashes, 0) << "seed " << seed;
  EXPECT_GT(dups, 0) << "seed " << seed;
}

}  // namespace
}  // namespace msgq
