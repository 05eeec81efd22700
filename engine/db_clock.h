// DbClock: "now" on the database's clock, for everything msgqd compares
// with time_next and time_acked.
//
// Due times are written by MySQL (time_next's defaults, applications'
// UNIX_TIMESTAMP()) and by msgqd; they must agree, whatever this host's
// wall clock does. Now() is the database's wall time as last measured
// (Observe), carried forward on the monotonic clock: a step of this host's
// wall clock changes nothing, and a step of the database's is followed at
// the next measurement. Before the first measurement Now() is the base
// clock's wall time. MonotonicNow() is the base clock's.
//
// Now() is never ahead of the database's clock, so that nothing is sent
// before its time_next: a measurement says only that the database read its
// clock somewhere within the query's round trip, and the estimate assumes
// the latest moment, the reply's arrival (it may be behind by up to the
// round trip). A measurement consistent with the current estimate leaves
// it alone, so Now() does not wobble with the round trip; one that shows it
// behind or ahead (a better measurement, drift, or a clock step on either
// side) replaces it at once.
//
// Thread-safe.
#ifndef MSGQ_ENGINE_DB_CLOCK_H_
#define MSGQ_ENGINE_DB_CLOCK_H_

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace msgq {

class DbClock final : public Clock {
 public:
  explicit DbClock(const Clock* base) : base_(base) {}

  absl::Time Now() const override;
  absl::Time MonotonicNow() const override { return base_->MonotonicNow(); }

  // The database said its time was `db_now` during a query that ran
  // between the monotonic readings `sent` and `received`.
  void Observe(absl::Time db_now, absl::Time sent, absl::Time received);
  // Database time minus monotonic time, once measured.
  std::optional<absl::Duration> offset() const;

 private:
  const Clock* const base_;
  mutable absl::Mutex mu_;
  std::optional<absl::Duration> offset_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_DB_CLOCK_H_
