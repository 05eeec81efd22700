// LogShows: waits up to `timeout` for `text` in msgqd's log. msgqd logs
// through a writer thread, so a line can trail what a test saw happen.
// Not thread-safe (as Msgqd::Log()).
#ifndef MSGQ_TESTS_LOG_WAIT_H_
#define MSGQ_TESTS_LOG_WAIT_H_

#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "tests/test_env.h"

namespace msgq::testing {

inline bool LogShows(const Msgqd& server, const std::string& text,
                     absl::Duration timeout) {
  return Eventually([&] { return absl::StrContains(server.Log(), text); },
                    timeout);
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_LOG_WAIT_H_
