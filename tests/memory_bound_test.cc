// msgqd's memory under transactions and rows far larger than it may hold
// (docs/reliability.md#memory-is-bounded-by-configuration): msgqd runs in
// a memory cgroup (v1) of 256 MiB, with default flags, while an application
// commits one transaction of 60,000 rows of 2 KB, twenty rows of 3.5 MB and
// one row of 40 MB. Every row that can be sent arrives and is acked, the
// 40 MB row dies with its size as the reason (it is never read into
// msgqd's memory), and msgqd is never OOM-killed.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "msgq/subscriber.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

// A memory cgroup (v1) of its own for one process, with a hard limit; the
// process goes back to the root group when this ends. Root only.
class MemoryCgroup {
 public:
  static std::unique_ptr<MemoryCgroup> Create(pid_t pid, int64_t limit) {
    const std::string dir =
        absl::StrCat("/sys/fs/cgroup/memory/msgq-test-", pid);
    if (mkdir(dir.c_str(), 0755) != 0) return nullptr;
    auto group = std::unique_ptr<MemoryCgroup>(new MemoryCgroup(dir, pid));
    // The limit first, so that the process never runs in the group without.
    if (!Write(dir + "/memory.limit_in_bytes", absl::StrCat(limit)) ||
        !Write(dir + "/cgroup.procs", absl::StrCat(pid))) {
      return nullptr;
    }
    return group;
  }
  ~MemoryCgroup() {
    Write("/sys/fs/cgroup/memory/cgroup.procs", absl::StrCat(pid_));
    rmdir(dir_.c_str());
  }
  // The group's peak usage so far, and the times the kernel's OOM killer
  // ran in it.
  int64_t peak() const { return Read("memory.max_usage_in_bytes"); }
  int64_t oom_kills() const {
    std::ifstream in(dir_ + "/memory.oom_control");
    std::string key;
    int64_t value = -1;
    while (in >> key >> value) {
      if (key == "oom_kill") return value;
    }
    return 0;  // kernels without the counter
  }

 private:
  MemoryCgroup(std::string dir, pid_t pid) : dir_(std::move(dir)), pid_(pid) {}
  static bool Write(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text << std::flush;
    return static_cast<bool>(out);
  }
  int64_t Read(const std::string& file) const {
    std::ifstream in(dir_ + "/" + file);
    int64_t n = -1;
    in >> n;
    return n;
  }
  const std::string dir_;
  const pid_t pid_;
};

class MemoryBoundTest : public MsgqTest {
 protected:
  PrivateMariaDb::Options DbOptions() override {
    PrivateMariaDb::Options options;
    // Room for the 40 MB row in a statement and in the binlog.
    options.extra_args = {"--max_allowed_packet=128M"};
    return options;
  }

  int64_t Count(const std::string& where) {
    int64_t n = -1;
    const std::string sql =
        absl::StrCat("SELECT COUNT(*) FROM msgq.big WHERE ", where);
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &n)) << sql;
    return n;
  }
};

constexpr int64_t kLimit = int64_t{256} << 20;

TEST_F(MemoryBoundTest, HugeTransactionsAndRowsStayWithinTheCgroup) {
  if (access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) != 0) {
    GTEST_SKIP() << "needs a writable cgroup v1 memory hierarchy (root)";
  }
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("big", "vt_ack_wait=60", "last_error varchar(1024)"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::unique_ptr<MemoryCgroup> group =
      MemoryCgroup::Create(server_->pid(), kLimit);
  ASSERT_NE(group, nullptr);
  // A msgqd that died stays in its group until reaped: end it first.
  absl::Cleanup remove_group = [&] {
    server_.reset();
    group.reset();
  };
  std::atomic<int64_t> handled{0};
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel(server_->address()), "big",
      [&](const Message&) -> HandlerResult {
        handled.fetch_add(1);
        return HandlerResult::Ack();
      },
      SubscriberOptions{.concurrency = 2});
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();

  // One transaction of 60,000 rows of 2 KB (120 MB).
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.big (id, message) SELECT seq, "
           "CONCAT('\"', REPEAT('x', 2000), '\"') FROM seq_1_to_60000"));
  // Twenty rows of 3.5 MB, each under --max_message_bytes (4,000,000).
  for (int i = 1; i <= 20; ++i) {
    ASSERT_NO_FATAL_FAILURE(Exec(
        absl::StrCat("INSERT INTO msgq.big (id, message) VALUES (", 100000 + i,
                     ", CONCAT('\"', REPEAT('y', 3500000), '\"'))")));
  }
  // One row of 40 MB: too large to send.
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.big (id, message) VALUES (200000, "
           "CONCAT('\"', REPEAT('z', 40000000), '\"'))"));

  ASSERT_TRUE(Eventually(
      [&] {
        return Count("time_acked IS NOT NULL") == 60020 ||
               kill(server_->pid(), 0) != 0;
      },
      absl::Seconds(150)))
      << "acked " << Count("time_acked IS NOT NULL") << " handled "
      << handled.load() << "\n"
      << server_->Log();
  EXPECT_EQ(group->oom_kills(), 0);
  ASSERT_EQ(kill(server_->pid(), 0), 0) << "msgqd died\n" << server_->Log();
  EXPECT_EQ(Count("time_acked IS NOT NULL"), 60020);
  ASSERT_TRUE(Eventually(
      [&] {
        return Count(
                   "time_next IS NULL AND "
                   "time_acked IS NULL") == 1;
      },
      absl::Seconds(30)))
      << server_->Log();
  EXPECT_EQ(db_->Scalar("SELECT last_error FROM msgq.big WHERE id = 200000"),
            "row of 40000002 bytes is larger than the stream limit of 4000000 "
            "bytes (msgqd --max_message_bytes; raise it together with the "
            "clients' gRPC max receive message size)");
  EXPECT_LT(group->peak(), kLimit);
  // The figure docs/reliability.md quotes.
  std::printf("msgqd's cgroup peaked at %.0f MiB\n",
              static_cast<double>(group->peak()) / (1 << 20));
  RecordProperty("cgroup_peak_bytes", std::to_string(group->peak()));
  (*subscriber)->Stop();
}

}  // namespace
}  // namespace msgq::testing
