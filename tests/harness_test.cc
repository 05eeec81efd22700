// The harness cleans up after itself: what a test process starts (a private
// MariaDB through tools/mariadb-private, msgqd) dies with it however it dies,
// and the directories it leaves are swept by the next test process without
// touching those of tests still running. A restarted MariaDB whose port was
// taken meanwhile comes back on another one.
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_env.h"
#include "tools/launch/child_process.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kChildEnv[] = "MSGQ_HARNESS_CHILD_OUT";

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ||
         stat[paren + 2] != 'Z';
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
}

// Not a test of its own: the process the next test kills. It starts the
// harness, reports what it started and waits to be killed.
TEST(HarnessChild, StartsTheHarnessAndWaits) {
  const char* out = getenv(kChildEnv);
  if (out == nullptr) GTEST_SKIP() << "run by KilledTestLeavesNothingBehind";
  auto db = PrivateMariaDb::Start({});
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("CREATE DATABASE msgq").ok());
  auto server = Msgqd::Start(**db, {"--databases=msgq"});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string tmp = absl::StrCat(out, ".tmp");
  {
    std::ofstream f(tmp);
    f << (*db)->dir() << " " << ReadAll((*db)->dir() + "/mariadbd.pid") << " "
      << (*server)->dir() << " " << (*server)->pid() << "\n";
  }
  ASSERT_EQ(rename(tmp.c_str(), out), 0);
  for (;;) pause();
}

TEST(HarnessTest, KilledTestLeavesNothingBehind) {
  auto scratch = launch::OwnedDir::Create("msgq-test-harness");
  ASSERT_TRUE(scratch.ok()) << scratch.status();
  const std::string out = (*scratch)->path() + "/started";
  ASSERT_EQ(setenv(kChildEnv, out.c_str(), 1), 0);
  auto child = launch::ChildProcess::Start(
      {"/proc/self/exe", "--gtest_filter=HarnessChild.*"},
      (*scratch)->path() + "/child.log");
  unsetenv(kChildEnv);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(Eventually([&] { return fs::exists(out); }, absl::Seconds(90)))
      << (*child)->Log();

  std::string db_dir, srv_dir;
  pid_t mariadbd = 0, msgqd = 0;
  std::istringstream(ReadAll(out)) >> db_dir >> mariadbd >> srv_dir >> msgqd;
  ASSERT_GT(mariadbd, 1);
  ASSERT_GT(msgqd, 1);
  ASSERT_TRUE(Alive(mariadbd));
  ASSERT_TRUE(Alive(msgqd));
  const pid_t watchdog = std::stoi(ReadAll(db_dir + "/watchdog.pid"));
  ASSERT_TRUE(Alive(watchdog));

  // A crash: no destructor, no atexit, nothing of the child's runs.
  EXPECT_EQ((*child)->Stop(SIGKILL, absl::Seconds(10)), 128 + SIGKILL);

  // msgqd: PR_SET_PDEATHSIG; mariadbd: the launcher's watchdog (1 s polls).
  EXPECT_TRUE(Eventually([&] { return !Alive(msgqd); }, absl::Seconds(10)));
  EXPECT_TRUE(Eventually([&] { return !Alive(mariadbd); }, absl::Seconds(10)));
  EXPECT_TRUE(Eventually([&] { return !Alive(watchdog); }, absl::Seconds(10)));
  // The directories outlive their owner until the next sweep (this one, or
  // that of a test process starting in parallel: while that one holds a
  // directory's lock and deletes it, this sweep skips it, so wait for it).
  EXPECT_TRUE(Eventually(
      [&] {
        (void)launch::SweepStaleDirs(kTempPrefix);
        return !fs::exists(db_dir) && !fs::exists(srv_dir);
      },
      absl::Seconds(10)))
      << db_dir << " or " << srv_dir << " is still there";
}

// Processes whose command line names something inside `dir`.
int ProcessesOf(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (ReadAll(e.path().string() + "/cmdline").find(dir + "/") !=
            std::string::npos &&
        Alive(std::stoi(pid))) {
      ++n;
    }
  }
  return n;
}

// The owner may die while the launcher is still starting the server (before
// mariadbd wrote its pid file): the server must not survive that either.
TEST(HarnessTest, AServerStartedForADeadOwnerDoesNotSurvive) {
  auto dir = launch::OwnedDir::Create("msgq-test-deadowner");
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto owner = launch::ChildProcess::Start({"true"}, (*dir)->path() + "/o.log");
  ASSERT_TRUE(owner.ok()) << owner.status();
  const pid_t owner_pid = (*owner)->pid();
  ASSERT_TRUE(Eventually([&] { return !(*owner)->running(); },  // reaped
                         absl::Seconds(10)));
  const std::string launcher = launch::ShellQuote(std::string(MSGQ_SOURCE_DIR) +
                                                  "/tools/mariadb-private");
  // Fails ("did not start") when the watchdog is quick, succeeds when the
  // server answered first; either way it must be gone soon after.
  (void)launch::RunCommand(
      absl::StrCat(launcher, " start ", launch::ShellQuote((*dir)->path()),
                   " --binlog=off --owner-pid=", owner_pid, " 2>/dev/null"));
  EXPECT_TRUE(Eventually([&] { return ProcessesOf((*dir)->path()) == 0; },
                         absl::Seconds(10)));
  (void)launch::RunCommand(absl::StrCat(
      launcher, " stop ", launch::ShellQuote((*dir)->path()), " --kill"));
}

// (A prefix of its own: test processes starting in parallel sweep
// msgq-test-*.)
TEST(HarnessTest, TheSweepRemovesOnlyDirectoriesWithoutALiveOwner) {
  auto mine = launch::OwnedDir::Create("msgq-sweeptest");
  ASSERT_TRUE(mine.ok()) << mine.status();
  // Unlocked (being created, or from an older harness): old ones go, young
  // ones stay.
  char young[] = "/tmp/msgq-sweeptest-young-XXXXXX";
  ASSERT_NE(mkdtemp(young), nullptr);
  char old[] = "/tmp/msgq-sweeptest-old-XXXXXX";
  ASSERT_NE(mkdtemp(old), nullptr);
  fs::last_write_time(old,
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  // Another old unlocked one where a process still runs: maybe a live test
  // of an older harness, so it stays.
  char busy[] = "/tmp/msgq-sweeptest-busy-XXXXXX";
  ASSERT_NE(mkdtemp(busy), nullptr);
  auto busy_sleeper = launch::ChildProcess::Start(
      {"sleep", "600"}, std::string(busy) + "/sleeper.log");
  ASSERT_TRUE(busy_sleeper.ok()) << busy_sleeper.status();
  std::ofstream(std::string(busy) + "/sleeper.pid") << (*busy_sleeper)->pid();
  fs::last_write_time(busy,
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  // A dead owner's directory (unlocked lock file): a process started in it
  // and named by a pid file there, and one that only shares the pid file's
  // number space (this test) are told apart: only the first is killed.
  char dead[] = "/tmp/msgq-sweeptest-dead-XXXXXX";
  ASSERT_NE(mkdtemp(dead), nullptr);
  std::ofstream(std::string(dead) + "/.owner.lock") << "1\n";
  auto sleeper = launch::ChildProcess::Start(
      {"sleep", "600"}, std::string(dead) + "/sleeper.log");
  ASSERT_TRUE(sleeper.ok()) << sleeper.status();
  std::ofstream(std::string(dead) + "/sleeper.pid") << (*sleeper)->pid();
  std::ofstream(std::string(dead) + "/other.pid") << getpid();

  // Both sleepers run `sleep` (no longer the forked test) before the sweep.
  for (pid_t pid : {(*busy_sleeper)->pid(), (*sleeper)->pid()}) {
    ASSERT_TRUE(Eventually(
        [&] {
          return ReadAll(absl::StrCat("/proc/", pid, "/cmdline"))
                     .rfind("sleep", 0) == 0;
        },
        absl::Seconds(10)));
  }
  EXPECT_EQ(launch::SweepStaleDirs("msgq-sweeptest"), 2);
  EXPECT_TRUE(fs::exists((*mine)->path()));
  EXPECT_TRUE(fs::exists(young));
  EXPECT_TRUE(fs::exists(busy));
  EXPECT_FALSE(fs::exists(old));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE((*sleeper)->running());
  EXPECT_TRUE((*busy_sleeper)->running());
  fs::remove_all(young);
  fs::remove_all(busy);
  const std::string mine_path = (*mine)->path();
  mine->reset();
  EXPECT_FALSE(fs::exists(mine_path));
}

// A directory being created is never swept: its lock file must be locked
// from the moment a sweep can see it (a sweep that locked it first removed
// a new test's directory under it: "cannot open .../child.log" in a
// ctest -j8 run).
TEST(HarnessTest, ADirectoryBeingCreatedIsNeverSwept) {
  std::atomic<bool> done{false};
  std::thread sweeper([&] {
    while (!done) (void)launch::SweepStaleDirs("msgq-sweeprace");
  });
  int failed = 0;
  int lost = 0;
  std::string example;
  for (int i = 0; i < 3000; ++i) {
    auto dir = launch::OwnedDir::Create("msgq-sweeprace");
    if (!dir.ok()) {
      ++failed;
      example = dir.status().ToString();
      continue;
    }
    // A file created after Create must stay: the directory is ours.
    std::ofstream(absl::StrCat((*dir)->path(), "/child.log")) << "x";
    if (ReadAll(absl::StrCat((*dir)->path(), "/child.log")) != "x") ++lost;
  }
  done = true;
  sweeper.join();
  EXPECT_EQ(failed, 0) << example;
  EXPECT_EQ(lost, 0);
}

TEST(HarnessTest, RestartMovesToAnotherPortWhenTheOldOneWasTaken) {
  auto db = PrivateMariaDb::Start({});
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("CREATE DATABASE kept").ok());
  const int old_port = (*db)->port();
  ASSERT_TRUE((*db)->Stop().ok());

  // Someone else listens on the old port now.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(old_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);

  absl::Status restarted = (*db)->Restart();
  close(fd);
  ASSERT_TRUE(restarted.ok()) << restarted;
  EXPECT_NE((*db)->port(), old_port);
  // Over TCP on the new port (mysql_options() follows), same data.
  MysqlOptions tcp = (*db)->mysql_options();
  tcp.socket.clear();
  EXPECT_EQ(tcp.port, (*db)->port());
  auto conn = MysqlConnection::Connect(tcp);
  ASSERT_TRUE(conn.ok()) << conn.status();
  auto rows = (*conn)->Query("SHOW DATABASES LIKE 'kept'");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(rows->rows[0][0].value_or(""), "kept");
}

}  // namespace
}  // namespace msgq::testing
