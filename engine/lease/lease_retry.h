// What the lease statements do when MySQL aborts them (docs/galera.md).
//
// On Galera, writes to one lease row from two nodes race: the loser's
// commit fails certification with error 1213 (ER_LOCK_DEADLOCK), and a
// statement that waited on a row lock too long fails with 1205
// (ER_LOCK_WAIT_TIMEOUT). MysqlConnection maps both (and an interrupted
// statement) to ABORTED: nothing of the statement applied, and the
// connection is fine. Every lease statement is one autocommit statement
// whose WHERE re-checks the row, so running it again is safe:
//
//   RetryAborted(f)   runs `f` once, and again at once, up to
//                     kAbortedRetries more times, while it returns ABORTED;
//   RenewLostRace(s)  a renewal that still fails with ABORTED lost a race
//                     with another instance's write: the round changes
//                     nothing and the grants run out by themselves, as
//                     after any failed round, but it is not "cannot renew"
//                     (MySQL answers; ownership is not "unknown").
//
// Pure functions, no I/O of their own. Thread-compatible.
#ifndef MSGQ_ENGINE_LEASE_LEASE_RETRY_H_
#define MSGQ_ENGINE_LEASE_LEASE_RETRY_H_

#include <utility>

#include "absl/status/status.h"

namespace msgq {

// Runs beyond the first; 2 keeps a renewal (a few statements) well within
// the fifth of a lease between two rounds.
inline constexpr int kAbortedRetries = 2;

// `f` returns absl::StatusOr<T>. Returns the first result that is not
// ABORTED, or the last ABORTED one after 1 + kAbortedRetries runs.
template <typename F>
auto RetryAborted(F&& f) -> decltype(f()) {
  auto result = f();
  for (int i = 0; i < kAbortedRetries &&
                  result.status().code() == absl::StatusCode::kAborted;
       ++i) {
    result = f();
  }
  return result;
}

inline bool RenewLostRace(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted;
}

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_LEASE_RETRY_H_
