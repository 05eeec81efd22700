// Promises the docs make of the client tools that no other test guards: the
// msgq CLI and the Python consumer run as real child processes against a real
// msgqd and a real private MariaDB, and are signalled, starved and cut off from
// their server the way a user's terminal or a restart would.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif
#ifndef MSGQ_PYTHON_STUBS
#error "MSGQ_PYTHON_STUBS must be defined"
#endif

extern char** environ;

namespace msgq::testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A child process with stdout on `stdout_fd` (closed in the parent by the
// caller) and stderr in a file; killed with SIGKILL when the test process
// dies, and by the destructor if still running.
class Child {
 public:
  Child(const std::vector<std::string>& argv,
        const std::vector<std::string>& extra_env, int stdout_fd)
      : err_path_(MakeTempPath()) {
    // Everything the child needs is built before fork: after it, in a
    // threaded process, only async-signal-safe calls.
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (char** e = environ; *e != nullptr; ++e) {
      if (strncmp(*e, "MSGQ_SERVER=", 12) != 0) env_.push_back(*e);
    }
    for (const auto& e : extra_env) env_.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int err_fd =
        open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null_fd = open("/dev/null", O_RDWR);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(null_fd, STDIN_FILENO);
      dup2(stdout_fd, STDOUT_FILENO);
      dup2(err_fd, STDERR_FILENO);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(err_fd);
    close(null_fd);
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink(err_path_.c_str());
  }

  pid_t pid() const { return pid_; }
  // Waits for the exit; its code, or -1 (killed by a signal / timeout).
  int Wait(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!exited_) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        break;
      }
      if (absl::Now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        exited_ = true;
        code_ = -1;
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return code_;
  }
  std::string err() const { return ReadFile(err_path_); }

 private:
  static std::string MakeTempPath() {
    char path[] = "/tmp/msgq-test-child-XXXXXX";
    const int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    return path;
  }

  std::string err_path_;
  std::vector<std::string> env_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// What `msgq tail --json` and `python3 -m msgq` print for a row of InsertRange.
std::string JsonLine(int id) {
  return absl::StrCat("{\"id\":", id, ",\"message\":\"{\\\"n\\\": ", id,
                      "}\"}");
}

class ClientPromisesTest : public MsgqTest {
 protected:
  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }
  std::vector<std::string> Ids(const std::string& sql) {
    std::vector<std::string> out;
    auto r = db_->Query(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status();
    if (!r.ok()) return out;
    for (const auto& row : r->rows) out.push_back(row[0].value_or("<NULL>"));
    return out;
  }
};

// Whether `pid` has SIGINT pending (not yet taken by its sigwait thread).
bool SigintPending(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "SigPnd:") ||
        absl::StartsWith(line, "ShdPnd:")) {
      uint64_t mask = 0;
      std::string hex(absl::StripAsciiWhitespace(line.substr(7)));
      if (absl::SimpleHexAtoi(hex, &mask) && (mask & (1ULL << (SIGINT - 1)))) {
        return true;
      }
    }
  }
  return false;
}

// README.md#quickstart: "watch the queue (acking what arrives):
// `msgq tail demo --ack`" ... "Ctrl-C stops"; `msgq tail --help`: "Stops on
// Ctrl-C".
// A message the CLI has printed is acked, even when Ctrl-C comes while its
// acks are still pending. The CLI's stdout is a 4 KiB pipe that the test does
// not read, and each message is ~8 KB: the first message's line blocks half
// written, so its handler is running and its ack not yet made when SIGINT
// arrives (and is taken by the CLI). Then the pipe is drained: the CLI
// finishes that line, must ack it (and whatever else it printed), and exit 0.
TEST_F(ClientPromisesTest, TailAckFlushesItsAcksOnSigint) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=300"));
  std::string values;
  for (int i = 1; i <= 4; ++i) {
    absl::StrAppend(&values, i > 1 ? "," : "", "(", i,
                    ", JSON_OBJECT('pad', REPEAT('x', 8000)))");
  }
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.q (id, message) VALUES " + values));
  ASSERT_NO_FATAL_FAILURE(StartServer());

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_GE(fcntl(fds[1], F_SETPIPE_SZ, 4096), 0);
  const int capacity = fcntl(fds[1], F_GETPIPE_SZ);
  ASSERT_GT(capacity, 0);
  ASSERT_LT(capacity, 8000);
  Child cli({MSGQ_CLI_PATH, "--server=" + server_->address(), "tail", "q",
             "--ack", "--json"},
            {}, fds[1]);
  close(fds[1]);
  // The pipe is full: the CLI is blocked in the middle of the first line.
  ASSERT_TRUE(Eventually(
      [&] {
        int queued = 0;
        return ioctl(fds[0], FIONREAD, &queued) == 0 && queued == capacity;
      },
      absl::Seconds(30)))
      << cli.err();
  ASSERT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT NULL"), 0);

  ASSERT_EQ(kill(cli.pid(), SIGINT), 0);
  ASSERT_TRUE(
      Eventually([&] { return !SigintPending(cli.pid()); }, absl::Seconds(10)))
      << "the CLI never took SIGINT";
  std::string out;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[65536];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the CLI closed stdout (exited)
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  const int code = cli.Wait(absl::Seconds(30));
  EXPECT_EQ(code, 0) << cli.err();

  // Every line is whole, and what was printed is exactly what is acked.
  std::vector<std::string> printed;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "{\"id\":") &&
                absl::EndsWith(line, "\"}"))
        << "partial line of " << line.size() << " bytes";
    std::string id(line.substr(6, line.find(',') - 6));
    printed.push_back(id);
  }
  ASSERT_TRUE(absl::EndsWith(out, "\n")) << "last line cut";
  ASSERT_FALSE(printed.empty());
  EXPECT_EQ(printed.front(), "1");
  EXPECT_EQ(Ids("SELECT id FROM msgq.q WHERE time_acked IS NOT NULL ORDER BY "
                "id"),
            printed)
      << cli.err();
}

// docs/api.md#python-package: the Python consumer "reconnects with capped
// exponential backoff" (client/python/msgq/consume.py), and README.md#msgq:
// "`kill -9` of msgqd ... delays messages, never drops them".
// `python3 -m msgq --count 6` consumes 1-3; msgqd
// is killed (SIGKILL); 4-6 are inserted while it is down; msgqd starts again
// on the same address. The same consumer process prints 1-6, each once, in
// order, acks them all and exits 0.
TEST_F(ClientPromisesTest, PythonConsumerKeepsConsumingAcrossMsgqdRestart) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=1"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string address = server_->address();
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));

  char out_path[] = "/tmp/msgq-test-py-out-XXXXXX";
  const int out_fd = mkstemp(out_path);
  ASSERT_GE(out_fd, 0);
  Child python({"/usr/bin/python3", "-m", "msgq", "--server", address,
                "--count", "6", "q"},
               {std::string("PYTHONPATH=") + MSGQ_PYTHON_STUBS + ":" +
                    MSGQ_SOURCE_DIR + "/client/python",
                "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
               out_fd);
  close(out_fd);
  ASSERT_TRUE(Eventually(
      [&] {
        return Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT "
                   "NULL") == 3;
      },
      absl::Seconds(60)))
      << python.err();

  server_->Kill();
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 4, 6));
  server_.reset();
  ASSERT_NO_FATAL_FAILURE(StartServer({"--listen=" + address}));
  ASSERT_EQ(server_->address(), address);

  const int code = python.Wait(absl::Seconds(90));
  const std::string out = ReadFile(out_path);
  unlink(out_path);
  EXPECT_EQ(code, 0) << python.err();
  std::vector<std::string> expected;
  for (int i = 1; i <= 6; ++i) expected.push_back(JsonLine(i));
  EXPECT_THAT(
      std::vector<std::string>(absl::StrSplit(out, '\n', absl::SkipEmpty())),
      ElementsAreArray(expected))
      << python.err();
  EXPECT_THAT(python.err(), HasSubstr("reconnecting"));
  EXPECT_EQ(Ids("SELECT id FROM msgq.q WHERE time_acked IS NOT NULL ORDER BY "
                "id"),
            (std::vector<std::string>{"1", "2", "3", "4", "5", "6"}));
}

}  // namespace
}  // namespace msgq::testing
