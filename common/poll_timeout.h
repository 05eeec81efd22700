// PollTimeoutMs: the timeout argument of poll(2) for an absolute deadline:
// -1 for absl::InfiniteFuture(), else the milliseconds left rounded up (so
// a wait never ends just before its deadline and spins), at least 0, at
// most 2^30. Header-only; thread-safe (reads the clock).
#ifndef MSGQ_COMMON_POLL_TIMEOUT_H_
#define MSGQ_COMMON_POLL_TIMEOUT_H_

#include <algorithm>
#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace msgq {

inline int PollTimeoutMs(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return -1;
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
      int64_t{1} << 30));
}

}  // namespace msgq

#endif  // MSGQ_COMMON_POLL_TIMEOUT_H_
