// StartStuckSubscriber: a subscriber in another process (the msgq CLI
// `tail`, no --ack) that is SIGSTOPped once msgqd has sent it a row (a
// postpone shows in MySQL): nothing reads its socket, so once the kernel
// buffers and the HTTP/2 window hold what it was sent it takes no more,
// and the rest stays queued in msgqd's cache. Rows must be large (MBs) for
// that to happen after a few rows.
//
// Returns (fatal gtest failures otherwise: call it under
// ASSERT_NO_FATAL_FAILURE) once msgqd's cache of msgq.`table` is stable:
// the same `cached` count and the same number of sent rows (epoch > 0) in
// MySQL over 2 s. `*pid` is set as soon as the child runs; the caller
// kills and reaps it (SIGKILL, waitpid). It dies with the test process too
// (PR_SET_PDEATHSIG). Not thread-safe.
#ifndef MSGQ_TESTS_STUCK_SUBSCRIBER_H_
#define MSGQ_TESTS_STUCK_SUBSCRIBER_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/test_env.h"

namespace msgq::testing {

inline void StartStuckSubscriber(const char* cli, const Msgqd& server,
                                 PrivateMariaDb& db, const std::string& table,
                                 pid_t* pid, int64_t* cached) {
  const std::string address = "--server=" + server.address();
  *pid = fork();
  ASSERT_GE(*pid, 0);
  if (*pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    execl(cli, cli, address.c_str(), "tail", table.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::unique_ptr<v1::Messaging::Stub> stub = server.Stub();
  const std::string sent_sql =
      "SELECT COUNT(*) FROM msgq.`" + table + "` WHERE epoch > 0";
  auto sent = [&] {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db.Scalar(sent_sql), &v)) << sent_sql;
    return v;
  };
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub.get(), table).subscribers() == 1; },
      absl::Seconds(20)));
  ASSERT_TRUE(Eventually([&] { return sent() > 0; }, absl::Seconds(20)));
  ASSERT_EQ(kill(*pid, SIGSTOP), 0);
  ASSERT_TRUE(Eventually(
      [&] {
        const int64_t c0 = FindTable(stub.get(), table).cached();
        const int64_t s0 = sent();
        absl::SleepFor(absl::Seconds(1));
        const int64_t c1 = FindTable(stub.get(), table).cached();
        const int64_t s1 = sent();
        absl::SleepFor(absl::Seconds(1));
        *cached = FindTable(stub.get(), table).cached();
        const int64_t s2 = sent();
        return *cached > 0 && *cached == c0 && c0 == c1 && s0 == s1 && s1 == s2;
      },
      absl::Seconds(30)))
      << "cached " << *cached;
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_STUCK_SUBSCRIBER_H_
