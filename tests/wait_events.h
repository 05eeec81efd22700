// Events an integration test waits for where it proves a negative ("nothing
// more arrives", "the row is still there"): instead of sleeping a guessed
// time, wait until msgqd has done the work that would have shown it.
//
//   const int64_t polls = Polls(stub_.get(), "q");
//   ASSERT_TRUE(WaitForPolls(stub_.get(), "q", polls + 3, absl::Seconds(20)));
//   EXPECT_EQ(s.row_count(), 3u);  // a due row would have been read by now
//
// Each call asks msgqd over gRPC (ListTables); thread-compatible.
#ifndef MSGQ_TESTS_WAIT_EVENTS_H_
#define MSGQ_TESTS_WAIT_EVENTS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "tests/test_env.h"

namespace msgq::testing {

// The polls of `table` so far (TableStatus.polls: its reads of due rows,
// counted when they return).
inline int64_t Polls(v1::Messaging::Stub* stub, const std::string& table,
                     const std::string& keyspace = "msgq") {
  return FindTable(stub, table, keyspace).polls();
}

// Waits until `table` has been polled at least `total` times (take the
// start from Polls()); false on timeout. A row due before the first of
// those polls started has been read by the last (the poll after it may
// have started before the row was due).
inline bool WaitForPolls(v1::Messaging::Stub* stub, const std::string& table,
                         int64_t total, absl::Duration timeout,
                         const std::string& keyspace = "msgq") {
  return Eventually([&] { return Polls(stub, table, keyspace) >= total; },
                    timeout);
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_WAIT_EVENTS_H_
