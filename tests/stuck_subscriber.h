// StartStuckSubscriber: a subscriber in another process (the msgq CLI
// `msgq tail TABLE --max_unacked=N`, no --ack) that takes exactly `take`
// rows and acks none, so msgqd sends it nothing more until their ack wait
// runs out and the rest of the table stays queued in msgqd's cache.
// (max_unacked, not a subscriber SIGSTOPped once a postpone shows in MySQL:
// how many rows a stopped one takes depends on how soon the stop comes after
// the first send, and on a loaded machine can be all of them.) Needs
// vt_batch_size=1 (a batch counts whole against max_unacked) and an ack
// wait longer than the test.
//
// Returns (fatal gtest failures otherwise: call it under
// ASSERT_NO_FATAL_FAILURE) once `take` rows of msgq.`table` were sent
// (epoch > 0 in MySQL, the postpones written) and msgqd's cache of it is
// stable: the same `cached` count over 1 s, and > 0. `*pid` is set as soon
// as the child runs; the caller kills and reaps it (SIGKILL, waitpid). It
// dies with the test process too (PR_SET_PDEATHSIG). Not thread-safe.
#ifndef MSGQ_TESTS_STUCK_SUBSCRIBER_H_
#define MSGQ_TESTS_STUCK_SUBSCRIBER_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/test_env.h"

namespace msgq::testing {

inline void StartStuckSubscriber(const char* cli, const Msgqd& server,
                                 PrivateMariaDb& db, const std::string& table,
                                 int take, pid_t* pid, int64_t* cached) {
  const std::string address = "--server=" + server.address();
  const std::string max_unacked = absl::StrCat("--max_unacked=", take);
  *pid = fork();
  ASSERT_GE(*pid, 0);
  if (*pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    execl(cli, cli, address.c_str(), "tail", table.c_str(), max_unacked.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::unique_ptr<v1::Messaging::Stub> stub = server.Stub();
  const std::string sent_sql =
      "SELECT COUNT(*) FROM msgq.`" + table + "` WHERE epoch > 0";
  int64_t sent = -1;
  ASSERT_TRUE(Eventually(
      [&] {
        EXPECT_TRUE(absl::SimpleAtoi(db.Scalar(sent_sql), &sent)) << sent_sql;
        return sent >= take;
      },
      absl::Seconds(30)))
      << sent << " of " << take << " sent";
  ASSERT_TRUE(Eventually(
      [&] {
        const int64_t c0 = FindTable(stub.get(), table).cached();
        absl::SleepFor(absl::Seconds(1));
        *cached = FindTable(stub.get(), table).cached();
        return *cached > 0 && *cached == c0;
      },
      absl::Seconds(30)))
      << "cached " << *cached;
  // Exactly `take`, however long it had: msgqd holds to max_unacked.
  ASSERT_TRUE(absl::SimpleAtoi(db.Scalar(sent_sql), &sent)) << sent_sql;
  ASSERT_EQ(sent, take);
  ASSERT_EQ(FindTable(stub.get(), table).subscribers(), 1);
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_STUCK_SUBSCRIBER_H_
