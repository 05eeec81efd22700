// msgqd's start as an operator meets it
// (docs/operations.md#start-stop-and-the-binlog): a MySQL that refuses the
// login is reported at start (one error line naming the user and server), by
// `msgq tables` (exit 3 with MySQL's reason) and by /readyz (503) until the
// login works; a port in use fails the start, naming the port and its flag, for
// each of the three ports.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.exit_code << "\n--- stdout:\n"
            << r.out << "--- stderr:\n"
            << r.err;
}

// The msgq CLI with `args`, under a 60 s timeout; stdin is /dev/null.
Result Cli(const std::vector<std::string>& args) {
  char err_path[] = "/tmp/msgq-startup-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  std::string command =
      absl::StrCat("env -u MSGQ_SERVER timeout 60 ", MSGQ_CLI_PATH);
  for (const std::string& a : args) absl::StrAppend(&command, " '", a, "'");
  absl::StrAppend(&command, " </dev/null 2>", err_path);
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  unlink(err_path);
  return r;
}

// The lines of msgqd's `log` at `level` ('I', 'W', 'E') that contain
// `text`, without their level and time.
std::vector<std::string> LogLines(const std::string& log, char level,
                                  const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (line.empty() || line[0] != level || !absl::StrContains(line, text)) {
      continue;
    }
    // "L2026-01-02 03:04:05.678 message": the message after the 2nd space.
    size_t at = line.find(' ');
    if (at != absl::string_view::npos) at = line.find(' ', at + 1);
    out.emplace_back(at == absl::string_view::npos ? line
                                                   : line.substr(at + 1));
  }
  return out;
}

// A TCP socket listening on 127.0.0.1 at a port the kernel picked; closed
// with this object.
class TakenPort {
 public:
  TakenPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_, 1) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() {
    if (fd_ >= 0) close(fd_);
  }
  TakenPort(const TakenPort&) = delete;
  TakenPort& operator=(const TakenPort&) = delete;

  int port() const { return port_; }  // 0 when the socket failed

 private:
  int fd_ = -1;
  int port_ = 0;
};

class StartupTest : public HttpTest {
 protected:
  // Runs msgqd with `args` (after the test defaults: no HTTP or
  // MySQL-protocol port) until it exits; its exit code (-1: still running
  // after 30 s, killed), its log in `log`.
  int RunUntilExit(const std::vector<std::string>& args, std::string* log) {
    return Msgqd::RunUntilExit(*db_, args, absl::Seconds(30), log);
  }

  // msgqd with one port taken: exit 1, the one error line naming the port
  // and `flag`, and it never said it was listening.
  void ExpectPortInUse(const std::string& flag, int port,
                       const std::vector<std::string>& args) {
    std::string log;
    EXPECT_EQ(RunUntilExit(args, &log), 1) << log;
    EXPECT_EQ(
        LogLines(log, 'E', "is in use"),
        std::vector<std::string>{absl::StrCat(
            "port ", port, " (flag ", flag, ") is in use (127.0.0.1:", port,
            "): stop what listens there or give ", flag, " another port")})
        << log;
    EXPECT_FALSE(absl::StrContains(log, "msgqd listening on")) << log;
  }
};

TEST_F(StartupTest, WrongMysqlPasswordIsSaidAtStartByTablesAndReadyz) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE USER 'msgq'@'127.0.0.1' IDENTIFIED BY 'right'"));
  ASSERT_NO_FATAL_FAILURE(Exec("GRANT ALL ON *.* TO 'msgq'@'127.0.0.1'"));
  const std::string where = absl::StrCat("127.0.0.1:", db_->port());
  ASSERT_NO_FATAL_FAILURE(
      StartHttpServer({"--mysql_socket=", "--mysql_host=127.0.0.1",
                       absl::StrCat("--mysql_port=", db_->port()),
                       "--mysql_user=msgq", "--mysql_password=wrong"}));
  const std::string denied =
      "Access denied for user 'msgq'@'127.0.0.1' (using password: YES)";

  // At start: one error line naming the user, the server and MySQL's error.
  EXPECT_EQ(LogLines(server_->Log(), 'E', "MySQL"),
            std::vector<std::string>{absl::StrCat(
                "cannot log in to MySQL as msgq@", where,
                " (--mysql_user, --mysql_password): ", denied,
                "; msgqd serves no table and /readyz answers 503 until it can "
                "(it tries again every 200ms)")})
      << server_->Log();

  // msgq tables: exit 3 (unavailable) with MySQL's reason, no empty table.
  Result tables = Cli({"--server=" + server_->address(), "tables"});
  EXPECT_EQ(tables.exit_code, 3) << tables;
  EXPECT_EQ(tables.out, "");
  EXPECT_EQ(tables.err,
            absl::StrCat("msgq tables: server ", server_->address(),
                         " is unavailable: cannot read the schema: cannot "
                         "connect to MySQL at ",
                         where, ": ", denied, "\n"));

  // /readyz: 503 with the same reason; /healthz: the process is alive.
  EXPECT_EQ(HttpGet(Url("/readyz")),
            std::make_pair(503, absl::StrCat("not ready: cannot read the "
                                             "schema: cannot connect to MySQL "
                                             "at ",
                                             where, ": ", denied, "\n")));
  EXPECT_EQ(HttpGet(Url("/healthz")), std::make_pair(200, std::string("ok\n")));

  // Once the password is right, all three say so without a restart.
  ASSERT_NO_FATAL_FAILURE(
      Exec("ALTER USER 'msgq'@'127.0.0.1' IDENTIFIED BY 'wrong'"));
  EXPECT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 200; },
                         absl::Seconds(20)))
      << server_->Log();
  EXPECT_EQ(HttpGet(Url("/readyz")),
            std::make_pair(200, std::string("ready\n")));
  Result after = Cli({"--server=" + server_->address(), "tables"});
  EXPECT_EQ(after.exit_code, 0) << after;
  EXPECT_TRUE(absl::StrContains(after.out, "\nmsgq      jobs  loaded"))
      << after;
}

TEST_F(StartupTest, GrpcPortInUseFailsTheStart) {
  TakenPort taken;
  ASSERT_NE(taken.port(), 0);
  ExpectPortInUse("--listen", taken.port(),
                  {absl::StrCat("--listen=127.0.0.1:", taken.port())});
}

TEST_F(StartupTest, HttpPortInUseFailsTheStart) {
  TakenPort taken;
  ASSERT_NE(taken.port(), 0);
  ExpectPortInUse("--http_listen", taken.port(),
                  {absl::StrCat("--http_listen=127.0.0.1:", taken.port())});
}

TEST_F(StartupTest, MysqlProtocolPortInUseFailsTheStart) {
  TakenPort taken;
  ASSERT_NE(taken.port(), 0);
  ExpectPortInUse(
      "--mysql_protocol_listen", taken.port(),
      {absl::StrCat("--mysql_protocol_listen=127.0.0.1:", taken.port())});
}

// Two of msgqd's own ports on one free port: the one bound second fails
// the start, named by its flag (the MySQL-protocol port binds before the
// HTTP port).
TEST_F(StartupTest, TwoOfItsOwnPortsOnOnePortFailTheStart) {
  int port = 0;
  {
    TakenPort probe;  // a port free once `probe` closes it
    port = probe.port();
  }
  ASSERT_NE(port, 0);
  ExpectPortInUse("--http_listen", port,
                  {absl::StrCat("--mysql_protocol_listen=127.0.0.1:", port),
                   absl::StrCat("--http_listen=127.0.0.1:", port)});
}

}  // namespace
}  // namespace msgq::testing
