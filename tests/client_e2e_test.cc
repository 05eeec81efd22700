// The client tools end to end: the msgq CLI and the Python consumer run as
// child processes against a real msgqd and a real private MariaDB.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "msgq/client.h"
#include "msgq/subscriber.h"
#include "tests/cli_run.h"
#include "tests/fixture.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif
#ifndef MSGQ_PYTHON_STUBS
#error "MSGQ_PYTHON_STUBS must be defined"
#endif

namespace msgq::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

// Every child is killed after this long, so a hang fails instead of blocking.
constexpr int kChildTimeoutSeconds = 60;

struct Result {
  int exit_code = -1;  // 124 when `timeout` killed the child
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.exit_code << "\n--- stdout:\n"
            << r.out << "--- stderr:\n"
            << r.err;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `argv` (with `env` assignments) under `timeout`, capturing stdout,
// stderr and the exit code. stdin is /dev/null.
Result RunChild(const std::vector<std::string>& argv,
                const std::vector<std::string>& env = {}) {
  char err_path[] = "/tmp/msgq-e2e-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  std::string command = "env -u MSGQ_SERVER";
  for (const auto& e : env) absl::StrAppend(&command, " ", ShellQuote(e));
  absl::StrAppend(&command, " timeout --kill-after=5 ", kChildTimeoutSeconds);
  for (const auto& a : argv) absl::StrAppend(&command, " ", ShellQuote(a));
  absl::StrAppend(&command, " </dev/null 2>", err_path);
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ReadFile(err_path);
  unlink(err_path);
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// What `msgq tail --json` and `python3 -m msgq` print for a row of InsertRange.
std::string JsonLine(int id) {
  return absl::StrCat("{\"id\":", id, ",\"message\":\"{\\\"n\\\": ", id,
                      "}\"}");
}

std::vector<std::string> JsonLines(int from, int to) {
  std::vector<std::string> lines;
  for (int i = from; i <= to; ++i) lines.push_back(JsonLine(i));
  return lines;
}

class ClientE2eTest : public MsgqTest {
 protected:
  // The msgq CLI against this test's msgqd; `args` follow --server.
  Result Cli(std::vector<std::string> args) {
    args.insert(args.begin(), "--server=" + server_->address());
    args.insert(args.begin(), MSGQ_CLI_PATH);
    return RunChild(args);
  }

  // The Python package's command (`python3 -m msgq`, msgq-consume once
  // installed) with its environment; `args` follow the program.
  static Result RunPython(std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/python3", "-m", "msgq"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunChild(argv, {std::string("PYTHONPATH=") + MSGQ_PYTHON_STUBS +
                               ":" + MSGQ_SOURCE_DIR + "/client/python",
                           "PYTHONDONTWRITEBYTECODE=1"});
  }
  // The same against this test's msgqd; `args` follow --server.
  Result Python(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_->address()});
    return RunPython(std::move(args));
  }

  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }

  int64_t Acked(const std::string& table) {
    return Int("SELECT COUNT(*) FROM msgq.`" + table +
               "` WHERE time_acked IS NOT NULL");
  }
  int64_t Unacked(const std::string& table) {
    return Int("SELECT COUNT(*) FROM msgq.`" + table +
               "` WHERE time_acked IS NULL");
  }

  // Waits until msgqd lists `table` (loaded or not).
  void WaitForTable(const std::string& table) {
    ASSERT_TRUE(Eventually(
        [&] { return FindTable(stub_.get(), table).name() == table; },
        absl::Seconds(10)))
        << table;
  }
};

// 1. `msgq tables` lists loaded and failed tables, as text and as JSON.
TEST_F(ClientE2eTest, TablesListsLoadedAndFailedTables) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("broken", MessageComment("vt_batch_size=0"))));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("demo"));
  ASSERT_NO_FATAL_FAILURE(WaitForTable("broken"));
  const v1::TableStatus broken = FindTable(stub_.get(), "broken");
  ASSERT_FALSE(broken.loaded());
  EXPECT_THAT(broken.error(),
              AllOf(HasSubstr("`msgq`.`broken`"), HasSubstr("vt_batch_size")));
  // Discovery reads "poll" until the binlog stream is up; the dead count
  // is known once the table's exact counts are loaded.
  ASSERT_TRUE(Eventually(
      [&] {
        const v1::TableStatus demo = FindTable(stub_.get(), "demo");
        return demo.discovery() == "binlog" && demo.dead() == 0;
      },
      absl::Seconds(10)))
      << server_->Log();

  Result text = Cli({"tables"});
  ASSERT_EQ(text.exit_code, 0) << text;
  EXPECT_EQ(text.err, "");
  // Columns are padded to the widest cell plus two spaces.
  const std::string expected = absl::StrCat(
      "KEYSPACE  NAME    STATUS  DISCOVERY  SUBSCRIBERS  CACHED  IN_FLIGHT  "
      "DEAD  DETAILS\n",
      "msgq      broken  error   -          0            -       -          "
      "-     ",
      broken.error(), "\n",
      "msgq      demo    loaded  binlog     0            0       0          "
      "0     ack_wait=30s purge_after=86400s batch_size=10 cache_size=10000 "
      "poller_interval=30s min_backoff=30s\n");
  EXPECT_EQ(text.out, expected);

  Result json = Cli({"tables", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json;
  EXPECT_EQ(json.err, "");
  EXPECT_THAT(json.out, StartsWith("{\"tables\":["));
  EXPECT_EQ(json.out.back(), '\n');
  EXPECT_EQ(Lines(json.out).size(), 1u) << json;
  EXPECT_THAT(json.out, HasSubstr("\"name\":\"demo\""));
  EXPECT_THAT(json.out, HasSubstr("\"name\":\"broken\""));
  EXPECT_THAT(json.out, HasSubstr("\"keyspace\":\"msgq\""));
  EXPECT_THAT(json.out, HasSubstr("\"loaded\":true"));
  EXPECT_THAT(json.out, HasSubstr("\"loaded\":false"));
  EXPECT_THAT(json.out, HasSubstr("\"discovery\":\"binlog\""));
  EXPECT_THAT(json.out, HasSubstr("\"batch_size\":10"));
  EXPECT_THAT(json.out, HasSubstr("\"ack_wait\":30"));
  // The error is JSON-escaped (it quotes the bad value).
  EXPECT_THAT(broken.error(), HasSubstr("\"0\""));
  EXPECT_THAT(
      json.out,
      HasSubstr("\"error\":\"" +
                absl::StrReplaceAll(broken.error(), {{"\"", "\\\""}}) + "\""));
  // Every field present, also the default-valued ones.
  EXPECT_THAT(json.out, HasSubstr("\"error\":\"\""));
  EXPECT_THAT(json.out, HasSubstr("\"subscribers\":0"));

  // The subscriber count follows live subscriptions.
  StreamCollector s(stub_.get(), "demo");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 1; },
      absl::Seconds(10)));
  Result with_sub = Cli({"tables", "--json"});
  ASSERT_EQ(with_sub.exit_code, 0) << with_sub;
  EXPECT_THAT(with_sub.out, HasSubstr("\"subscribers\":1"));
}

// 2. `tail --ack --count 3 --json` prints exactly the 3 messages, exits 0 and
// leaves them acked in MySQL.
TEST_F(ClientE2eTest, TailAckCountJsonPrintsAndAcks) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  Result r = Cli({"tail", "demo", "--ack", "--count", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, absl::StrCat(absl::StrJoin(JsonLines(1, 3), "\n"), "\n"));
  EXPECT_EQ(r.err, "");
  // Acks are flushed before exit: no waiting needed.
  EXPECT_EQ(Acked("demo"), 3);
  EXPECT_EQ(Unacked("demo"), 0);

  // Acked messages are gone for good: a later message is the next one seen.
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 4, 4));
  Result next = Cli({"tail", "demo", "--ack", "--count=1", "--json"});
  ASSERT_EQ(next.exit_code, 0) << next;
  EXPECT_EQ(next.out, JsonLine(4) + "\n");
  EXPECT_EQ(Acked("demo"), 4);
}

// 2b. Without --ack the rows stay unacked and are redelivered after ack_wait.
TEST_F(ClientE2eTest, TailWithoutAckLeavesRowsUnacked) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("demo", "vt_ack_wait=2,vt_poller_interval=0.2"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Result r = Cli({"tail", "demo", "--count", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, absl::StrCat(absl::StrJoin(JsonLines(1, 3), "\n"), "\n"));
  EXPECT_EQ(Acked("demo"), 0);
  EXPECT_EQ(Unacked("demo"), 3);
  // Each was sent once (the postpone commits after the send: wait for it).
  EXPECT_TRUE(Eventually(
      [&] {
        return Int("SELECT COUNT(*) FROM msgq.demo WHERE epoch = 1") == 3;
      },
      absl::Seconds(10)));
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.demo WHERE epoch <> 1"), 0);

  // The same three come back (after ack_wait) and can be acked then.
  Result again = Cli({"tail", "demo", "--count", "3", "--json", "--ack"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(again.out,
            absl::StrCat(absl::StrJoin(JsonLines(1, 3), "\n"), "\n"));
  EXPECT_EQ(Acked("demo"), 3);
}

// 2c. The default text format.
TEST_F(ClientE2eTest, TailTextFormat) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("demo", "", "tenant varchar(20), note text"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.demo (id, message, tenant, note) VALUES "
           "(1, '{\"n\": 1}', 'acme', NULL), (2, NULL, 'a b', 'x\"y')"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Result r = Cli({"tail", "demo", "--count=2", "--ack"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out,
            "id=1 message=\"{\\\"n\\\": 1}\" tenant=acme note=NULL\n"
            "id=2 message=NULL tenant=\"a b\" note=\"x\\\"y\"\n");
  EXPECT_EQ(Acked("demo"), 2);
}

// 3. `msgq ack` and the exit codes of the error cases.
TEST_F(ClientE2eTest, AckAndErrorExitCodes) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("broken", MessageComment("vt_ack_wait=-1"))));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("broken"));

  Result ack = Cli({"ack", "demo", "1", "2", "999"});
  ASSERT_EQ(ack.exit_code, 0) << ack;
  EXPECT_EQ(ack.out,
            "acked 2 of 3; the other 1 was already acked or is not in demo\n");
  EXPECT_EQ(ack.err, "");
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.demo WHERE time_acked IS NOT NULL "
                "AND id IN (1, 2)"),
            2);
  EXPECT_EQ(Unacked("demo"), 1);
  // Acking again is not an error and counts nothing: it says so.
  Result again = Cli({"ack", "demo", "1", "2"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(again.out, "already acked or not in demo: 1 2\n");
  Result one = Cli({"ack", "demo", "1"});
  ASSERT_EQ(one.exit_code, 0) << one;
  EXPECT_EQ(one.out, "already acked or not in demo: 1\n");

  Result malformed = Cli({"ack", "demo", "abc"});
  EXPECT_EQ(malformed.exit_code, 1) << malformed;
  EXPECT_EQ(malformed.out, "");
  EXPECT_THAT(malformed.err, StartsWith("msgq ack: INVALID_ARGUMENT: "));
  EXPECT_THAT(malformed.err, HasSubstr("abc"));
  EXPECT_EQ(Unacked("demo"), 1);

  Result tail_missing = Cli({"tail", "nosuch", "--count", "1"});
  EXPECT_EQ(tail_missing.exit_code, 4) << tail_missing;
  EXPECT_EQ(tail_missing.out, "");
  EXPECT_THAT(tail_missing.err, StartsWith("msgq tail: NOT_FOUND: "));
  EXPECT_THAT(tail_missing.err, HasSubstr("nosuch"));

  Result ack_missing = Cli({"ack", "nosuch", "1"});
  EXPECT_EQ(ack_missing.exit_code, 4) << ack_missing;
  EXPECT_THAT(ack_missing.err, StartsWith("msgq ack: NOT_FOUND: "));

  Result wrong_keyspace =
      Cli({"tail", "demo", "--keyspace", "nosuchdb", "--count", "1"});
  EXPECT_EQ(wrong_keyspace.exit_code, 4) << wrong_keyspace;

  // A table that failed to load: exit 1, the load error on stderr.
  const std::string error = FindTable(stub_.get(), "broken").error();
  ASSERT_FALSE(error.empty());
  Result tail_broken = Cli({"tail", "broken", "--count", "1"});
  EXPECT_EQ(tail_broken.exit_code, 1) << tail_broken;
  EXPECT_EQ(tail_broken.err, "msgq tail: FAILED_PRECONDITION: " + error + "\n");
  Result ack_broken = Cli({"ack", "broken", "1"});
  EXPECT_EQ(ack_broken.exit_code, 1) << ack_broken;
  EXPECT_EQ(ack_broken.err, "msgq ack: FAILED_PRECONDITION: " + error + "\n");

  // Nothing listens on port 1.
  Result unreachable =
      RunChild({MSGQ_CLI_PATH, "--server=127.0.0.1:1", "tables"});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable;
  EXPECT_EQ(unreachable.out, "");
  EXPECT_THAT(unreachable.err,
              StartsWith("msgq tables: server 127.0.0.1:1 is unavailable: "));
  Result tail_unreachable =
      RunChild({MSGQ_CLI_PATH, "--server=127.0.0.1:1", "tail", "demo"});
  EXPECT_EQ(tail_unreachable.exit_code, 3) << tail_unreachable;
  Result ack_unreachable =
      RunChild({MSGQ_CLI_PATH, "ack", "--server=127.0.0.1:1", "demo", "3"});
  EXPECT_EQ(ack_unreachable.exit_code, 3) << ack_unreachable;
  EXPECT_EQ(Unacked("demo"), 1);

  // Usage errors.
  Result no_ids = Cli({"ack", "demo"});
  EXPECT_EQ(no_ids.exit_code, 2) << no_ids;
  Result unknown = Cli({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown;
  Result bad_flag = Cli({"tail", "demo", "--nope"});
  EXPECT_EQ(bad_flag.exit_code, 2) << bad_flag;
}

// `msgq tail --count=N --ack` (its --help): what it received but did not
// print is handed back at once, not left locked for the ack wait (300 s
// here). With --max_unacked=100 the server sends all three at once and
// tail hands two back (nack, no delay); without it, --count=1 asks for at
// most one at a time. Either way the other two are due at once and the
// next tail gets them.
TEST_F(ClientE2eTest, TailCountAckHandsBackTheRest) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "vt_ack_wait=300"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("demo"));
  const std::string due_unacked =
      "SELECT COUNT(*) FROM msgq.demo WHERE time_acked IS NULL AND "
      "time_next <= UNIX_TIMESTAMP(NOW(6)) * 1000000000";
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--max_unacked=100"},
        std::vector<std::string>{}}) {
    SCOPED_TRACE(flags.empty() ? "no --max_unacked" : flags[0]);
    ASSERT_NO_FATAL_FAILURE(Exec("DELETE FROM msgq.demo"));
    ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
    std::vector<std::string> args = {"tail", "demo", "--count=1", "--ack"};
    args.insert(args.end(), flags.begin(), flags.end());
    Result first = Cli(args);
    ASSERT_EQ(first.exit_code, 0) << first;
    ASSERT_EQ(Lines(first.out).size(), 1u) << first;
    EXPECT_EQ(first.err, "");
    EXPECT_EQ(Acked("demo"), 1);
    EXPECT_EQ(Int(due_unacked), 2);

    Result rest = Cli({"tail", "demo", "--count=2", "--ack", "--json"});
    ASSERT_EQ(rest.exit_code, 0) << rest;
    EXPECT_EQ(Lines(rest.out).size(), 2u) << rest;
    EXPECT_EQ(Acked("demo"), 3);
  }
}

// $MSGQ_SERVER is the default of --server.
TEST_F(ClientE2eTest, ServerFromEnvironment) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("demo"));
  Result r = RunChild({MSGQ_CLI_PATH, "ack", "demo", "1"},
                      {"MSGQ_SERVER=" + server_->address()});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "already acked or not in demo: 1\n");
}

// 4. The Python consumer prints and acks every message, each exactly once,
// in the stream's order (priority, time_next, id).
TEST_F(ClientE2eTest, PythonConsumerPrintsAndAcks) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 50));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Result r = Python({"--count", "50", "demo"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(Lines(r.out), ElementsAreArray(JsonLines(1, 50))) << r;
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Acked("demo"), 50);
  EXPECT_EQ(Unacked("demo"), 0);

  // Messages inserted while it is subscribed arrive too (binlog discovery).
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 51, 55));
  Result more = Python({"--count=5", "demo"});
  ASSERT_EQ(more.exit_code, 0) << more;
  EXPECT_THAT(Lines(more.out), ElementsAreArray(JsonLines(51, 55))) << more;
  EXPECT_EQ(Acked("demo"), 55);
}

// 4b. With --no-ack the rows stay unacked.
TEST_F(ClientE2eTest, PythonConsumerNoAckLeavesRowsUnacked) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 50));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Result r = Python({"--count", "50", "--no-ack", "demo"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(Lines(r.out), ElementsAreArray(JsonLines(1, 50))) << r;
  EXPECT_EQ(Acked("demo"), 0);
  EXPECT_EQ(Unacked("demo"), 50);
}

// 4c. The Python consumer's exit codes.
TEST_F(ClientE2eTest, PythonConsumerErrorExitCodes) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("broken", "vitess_message,vt_ack_wait=30")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("broken"));
  Result missing = Python({"--count", "1", "nosuch"});
  EXPECT_EQ(missing.exit_code, 4) << missing;
  EXPECT_EQ(missing.out, "");
  EXPECT_THAT(missing.err, StartsWith("msgq_consume: NOT_FOUND: "));

  Result broken = Python({"--count", "1", "broken"});
  EXPECT_EQ(broken.exit_code, 1) << broken;
  EXPECT_EQ(broken.err, "msgq_consume: FAILED_PRECONDITION: " +
                            FindTable(stub_.get(), "broken").error() + "\n");

  Result unreachable =
      RunPython({"--server", "127.0.0.1:1", "--count", "1", "demo"});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable;
  EXPECT_THAT(unreachable.err, StartsWith("msgq_consume: UNAVAILABLE: "));

  Result usage = Python({"--count", "-1", "demo"});
  EXPECT_EQ(usage.exit_code, 2) << usage;
}

// The CLI and the Python consumer print the same JSON for the same row.
TEST_F(ClientE2eTest, CliAndPythonAgreeOnJson) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("a", "", "n_int int, n_dec decimal(6,2), txt varchar(40)"));
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("b", "", "n_int int, n_dec decimal(6,2), txt varchar(40)"));
  const std::string values =
      " (id, message, n_int, n_dec, txt) VALUES "
      "(7, '[1, \"two\"]', -3, 12.50, 'tab\\there \\\\ q\"'), "
      "(8, NULL, NULL, NULL, '')";
  ASSERT_NO_FATAL_FAILURE(Exec("INSERT INTO msgq.a" + values));
  ASSERT_NO_FATAL_FAILURE(Exec("INSERT INTO msgq.b" + values));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Result cli = Cli({"tail", "a", "--json", "--count=2", "--ack"});
  ASSERT_EQ(cli.exit_code, 0) << cli;
  Result py = Python({"--count=2", "b"});
  ASSERT_EQ(py.exit_code, 0) << py;
  EXPECT_EQ(cli.out, py.out);
  EXPECT_THAT(Lines(cli.out),
              ElementsAreArray({
                  "{\"id\":7,\"message\":\"[1, \\\"two\\\"]\",\"n_int\":-3,"
                  "\"n_dec\":12.50,\"txt\":\"tab\\there \\\\ q\\\"\"}",
                  "{\"id\":8,\"message\":null,\"n_int\":null,\"n_dec\":null,"
                  "\"txt\":\"\"}",
              }));
}

// 5. README.md#quickstart: the table of schema/message_table.sql,
// an INSERT with the mariadb command-line client, `msgq tail demo --ack
// --count 1`.
TEST_F(ClientE2eTest, ReadmeQuickstart) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(
      ReadFile(std::string(MSGQ_SOURCE_DIR) + "/schema/message_table.sql")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("demo"));

  Result insert = RunChild({"mariadb", "--no-defaults", "-S", db_->socket(),
                            "-uroot", "msgq", "-e",
                            "INSERT INTO demo (id, message) VALUES (1, "
                            "'{\"hello\": \"world\"}')"});
  ASSERT_EQ(insert.exit_code, 0) << insert;

  Result tail = Cli({"tail", "demo", "--ack", "--count", "1"});
  ASSERT_EQ(tail.exit_code, 0) << tail;
  // The demo table streams msgq's optional time_created and last_error too
  // (time_dead never is).
  EXPECT_EQ(tail.out,
            absl::StrCat("id=1 message=\"{\\\"hello\\\": \\\"world\\\"}\" "
                         "time_created=",
                         db_->Scalar("SELECT time_created FROM msgq.demo"),
                         " last_error=NULL\n"));
  EXPECT_EQ(tail.err, "");
  EXPECT_EQ(Acked("demo"), 1);
  EXPECT_EQ(Unacked("demo"), 0);
}

// 6. Failure handling with the CLI: `nack --dead` kills a delivery (with its
// reason in last_error), `dead` lists it, `redrive` sends it again; a nack
// with --delay=0 sends a message again at once, and tail shows its epoch.
TEST_F(ClientE2eTest, CliNackDeadListAndRedrive) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("demo", "vt_poller_interval=0.2", "last_error varchar(255)"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 2));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Result tail = Cli({"tail", "demo", "--count=2"});
  ASSERT_EQ(tail.exit_code, 0) << tail;
  // First deliveries: epoch 0, not printed. last_error is a column too.
  EXPECT_THAT(
      Lines(tail.out),
      UnorderedElementsAre("id=1 message=\"{\\\"n\\\": 1}\" last_error=NULL",
                           "id=2 message=\"{\\\"n\\\": 2}\" last_error=NULL"));
  // The sends' postpones commit after the sends: wait for them.
  ASSERT_TRUE(Eventually(
      [&] {
        return Int("SELECT COUNT(*) FROM msgq.demo WHERE epoch = 1") == 2;
      },
      absl::Seconds(10)));

  Result extend = Cli({"extend", "demo", "1:0", "2:3", "--duration=60"});
  ASSERT_EQ(extend.exit_code, 0) << extend;
  EXPECT_EQ(extend.out, "extended 1 of 2\n");  // 2:3 is not a delivery

  Result stale = Cli({"nack", "demo", "1:5", "--dead"});
  ASSERT_EQ(stale.exit_code, 0) << stale;
  EXPECT_EQ(stale.out, "retried 0, dead 0 of 1\n");  // not the latest delivery

  Result kill = Cli({"nack", "demo", "1:0", "--dead", "--reason=bad payload"});
  ASSERT_EQ(kill.exit_code, 0) << kill;
  EXPECT_EQ(kill.out, "retried 0, dead 1 of 1\n");
  EXPECT_EQ(kill.err, "");
  EXPECT_EQ(db_->Scalar("SELECT CONCAT_WS(',', last_error, "
                        "IFNULL(time_next, 'null'), IFNULL(time_acked, "
                        "'null')) FROM msgq.demo WHERE id = 1"),
            "bad payload,null,null");

  Result dead = Cli({"dead", "demo"});
  ASSERT_EQ(dead.exit_code, 0) << dead;
  EXPECT_EQ(dead.out,
            "ID  EPOCH  DIED  LAST_ERROR\n"
            "1   1      -     bad payload\n");
  EXPECT_EQ(dead.err, "");
  Result json = Cli({"dead", "demo", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json;
  EXPECT_EQ(json.out,
            "{\"messages\":[{\"id\":\"1\",\"epoch\":1,\"last_error\":"
            "\"bad payload\",\"time_dead\":0,\"time_created\":0}]}\n");

  // Message 2 goes back at once, its reason kept.
  Result retry = Cli({"nack", "demo", "2:0", "--delay=0", "--reason=later"});
  ASSERT_EQ(retry.exit_code, 0) << retry;
  EXPECT_EQ(retry.out, "retried 1, dead 0 of 1\n");

  Result redrive = Cli({"redrive", "demo", "1", "2"});
  ASSERT_EQ(redrive.exit_code, 0) << redrive;
  EXPECT_EQ(redrive.out, "redriven 1 of 2\n");  // 2 is not dead
  Result none = Cli({"dead", "demo"});
  ASSERT_EQ(none.exit_code, 0) << none;
  EXPECT_EQ(none.out, "ID  EPOCH  DIED  LAST_ERROR\n");

  // Both come back: 1 redriven (epoch 0 again), 2 sent a second time; each
  // with the reason it last failed with.
  Result again = Cli({"tail", "demo", "--count=2", "--ack"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(Lines(again.out),
              UnorderedElementsAre(
                  "id=1 message=\"{\\\"n\\\": 1}\" last_error=\"bad payload\"",
                  "id=2 message=\"{\\\"n\\\": 2}\" last_error=later epoch=1"));
  EXPECT_EQ(Acked("demo"), 2);

  Result all = Cli({"redrive", "demo", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all;
  EXPECT_EQ(all.out, "redriven 0\n");
  Result missing = Cli({"dead", "nosuch"});
  EXPECT_EQ(missing.exit_code, 4) << missing;
  EXPECT_THAT(missing.err, StartsWith("msgq dead: NOT_FOUND: "));
}

// Collects the Subscriber's outcome for a test: what the handler saw.
class Seen {
 public:
  void Add(const std::string& id) {
    absl::MutexLock lock(&mu_);
    ids_.push_back(id);
  }
  bool WaitFor(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ids_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  std::vector<std::string> ids() {
    absl::MutexLock lock(&mu_);
    return ids_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
};

// 7. A C++ Subscriber whose handler returns Dead(reason) leaves the row dead
// with last_error; the others are acked.
TEST_F(ClientE2eTest, SubscriberHandlerKillsAMessage) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "", "last_error varchar(255)"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  Seen seen;
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel(server_->address()), "demo",
      [&](const Message& msg) -> HandlerResult {
        seen.Add(msg.id());
        if (msg.id() == "2") return HandlerResult::Dead("no such customer");
        return HandlerResult::Ack();
      },
      SubscriberOptions{.ack = {.max_batch = 2}});
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  ASSERT_TRUE(seen.WaitFor(3, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return (*subscriber)->stats().dead == 1; },
                         absl::Seconds(10)));
  (*subscriber)->Stop();
  EXPECT_THAT(seen.ids(), UnorderedElementsAre("1", "2", "3"));
  Subscriber::Stats stats = (*subscriber)->stats();
  EXPECT_EQ(stats.handled, 2);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_EQ(stats.acked, 2);
  EXPECT_EQ(stats.nack_calls, 1);
  EXPECT_EQ(stats.retried, 0);
  EXPECT_EQ(Acked("demo"), 2);
  EXPECT_EQ(db_->Scalar("SELECT CONCAT_WS(',', last_error, "
                        "IFNULL(time_next, 'null'), IFNULL(time_acked, "
                        "'null')) FROM msgq.demo WHERE id = 2"),
            "no such customer,null,null");
  EXPECT_EQ(FindTable(stub_.get(), "demo").dead(), 1);
}

// 8. A handler that runs longer than ack_wait keeps its message while the
// heartbeat extends it: a second subscriber is not sent it meanwhile.
TEST_F(ClientE2eTest, SubscriberHeartbeatKeepsASlowMessage) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("demo", "vt_ack_wait=2,vt_poller_interval=0.2"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForTable("demo"));
  absl::Mutex mu;
  bool started = false;
  SubscriberOptions options;
  // ack_wait (2 s) comes from ListTables; extend every 0.6 s by 2 s: an
  // extend may come up to ~1.4 s late (a loaded machine) and still hold.
  options.heartbeat = {.fraction = 0.3, .max_extension = absl::Seconds(60)};
  absl::StatusOr<std::unique_ptr<Subscriber>> slow = Subscriber::Start(
      NewChannel(server_->address()), "demo",
      [&](const Message&) {
        {
          absl::MutexLock lock(&mu);
          started = true;
        }
        absl::SleepFor(absl::Seconds(8));  // four times ack_wait
        return absl::OkStatus();
      },
      options);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 1; },
      absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 1));
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(
        mu.AwaitWithTimeout(absl::Condition(&started), absl::Seconds(10)));
  }
  // A second subscriber, for the rest of the slow handler's run.
  StreamCollector other(stub_.get(), "demo");
  ASSERT_TRUE(other.WaitForFields(absl::Seconds(10)));
  EXPECT_FALSE(other.WaitForRows(1, absl::Seconds(6)));
  (*slow)->Stop();  // waits for the handler, then acks
  EXPECT_EQ(other.row_count(), 0u);
  Subscriber::Stats stats = (*slow)->stats();
  EXPECT_EQ(stats.received, 1);
  EXPECT_EQ(stats.handled, 1);
  EXPECT_GE(stats.extended, 5);
  EXPECT_EQ(stats.lost, 0);
  EXPECT_EQ(stats.extend_errors, 0);
  EXPECT_EQ(stats.acked, 1);
  EXPECT_EQ(Acked("demo"), 1);
  EXPECT_EQ(Int("SELECT epoch FROM msgq.demo WHERE id = 1"), 1);
}

// 9. The Python consumer as a library: dead(reason) kills a message, an
// exception retries it with the table's backoff and its text as the reason.
TEST_F(ClientE2eTest, PythonHandlerResultsNackTheirMessages) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo", "", "last_error varchar(255)"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string script = R"(
import sys, grpc, msgq as m
def handler(msg):
    if msg.id == "2": return m.dead("bad row")
    if msg.id == "3": raise ValueError("flaky")
    return m.ack()
with grpc.insecure_channel(sys.argv[1]) as channel:
    print(m.consume(channel, "demo", handler, count=3))
)";
  Result r = RunChild({"/usr/bin/python3", "-c", script, server_->address()},
                      {std::string("PYTHONPATH=") + MSGQ_PYTHON_STUBS + ":" +
                           MSGQ_SOURCE_DIR + "/client/python",
                       "PYTHONDONTWRITEBYTECODE=1"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "3\n");
  EXPECT_EQ(r.err, "msgq_consume: handler failed: ValueError('flaky')\n");
  EXPECT_EQ(Acked("demo"), 1);
  EXPECT_EQ(db_->Scalar("SELECT CONCAT_WS(',', id, last_error, "
                        "IFNULL(time_next, 'null'), IFNULL(time_acked, "
                        "'null')) FROM msgq.demo WHERE id = 2"),
            "2,bad row,null,null");
  // Retried after the table's backoff (min_backoff 30s by default here).
  EXPECT_EQ(db_->Scalar("SELECT last_error FROM msgq.demo WHERE id = 3"),
            "flaky");
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.demo WHERE id = 3 AND time_acked "
                "IS NULL AND time_next > (UNIX_TIMESTAMP() + 20) * 1000000000"),
            1);
}

}  // namespace
}  // namespace msgq::testing
