// DbClock: "now" on the database's clock, for everything msgqd compares
// with time_next and time_acked, and readings of that clock on request.
//
// Due times are written by MySQL (time_next's defaults, applications'
// UNIX_TIMESTAMP()) and by msgqd; they must agree, whatever this host's
// wall clock does. Now() is the database's wall time as last measured
// (Observe), carried forward on the monotonic clock: a step of this host's
// wall clock changes nothing, and a step of the database's is followed at
// the next measurement. Before the first measurement Now() is the base
// clock's wall time. MonotonicNow() is the base clock's.
//
// Now() is never ahead of the database's clock while that clock does not
// step, so that nothing is sent before its time_next: a measurement says
// only that the database read its clock somewhere within the query's round
// trip, and the estimate assumes the latest moment, the reply's arrival
// (it may be behind by up to the round trip). A measurement consistent with
// the current estimate leaves it alone, so Now() does not wobble with the
// round trip; one that shows it behind or ahead (a better measurement,
// drift, or a clock step on either side) replaces it at once.
//
// Between a step back of the database's clock and the next measurement
// Now() is ahead by the step, so Now() only says when to look: the reads
// judge due by MySQL's clock in their SQL, and a manager acts on a due
// time it estimated only once a reading confirms it (DbReadings, the
// interface this implements; docs/design/due-clock.md). Last() is the
// latest measurement. Request() wakes the measuring thread (Engine::
// ClockLoop), which waits in WaitForMeasure between its measurements a
// second, brackets each with MeasureStarts/MeasureEnds, and wakes the
// waiters a successful one answered.
//
// Example (the measuring thread):
//   while (clock.WaitForMeasure(mono_now + absl::Seconds(1))) {
//     clock.MeasureStarts();
//     ... query MySQL's clock; on success clock.Observe(db, sent, received)
//     clock.MeasureEnds(ok);
//   }
//
// Thread-safe. Waiters are called with no lock of DbClock's held but one
// that Cancel() takes (so Cancel waits for a call in progress).
#ifndef MSGQ_ENGINE_DB_CLOCK_H_
#define MSGQ_ENGINE_DB_CLOCK_H_

#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/monotonic_cond_var.h"
#include "engine/queue/db_readings.h"

namespace msgq {

class DbClock final : public Clock, public DbReadings {
 public:
  explicit DbClock(const Clock* base) : base_(base) {}

  absl::Time Now() const override;
  absl::Time MonotonicNow() const override { return base_->MonotonicNow(); }

  // The database said its time was `db_now` during a query that ran
  // between the monotonic readings `sent` and `received`. It becomes the
  // latest reading (Last()).
  void Observe(absl::Time db_now, absl::Time sent, absl::Time received);
  // Database time minus monotonic time, once measured.
  std::optional<absl::Duration> offset() const;

  // DbReadings.
  std::optional<Reading> Last() const override;
  void Request(Waiter* waiter) override;
  void Cancel(Waiter* waiter) override;

  // ---- The measuring thread's side ----
  // Waits until a reading is requested, the monotonic `deadline` passes or
  // Close() is called. False once closed.
  bool WaitForMeasure(absl::Time deadline);
  // A measurement's query is about to be sent: it answers the requests
  // made so far.
  void MeasureStarts();
  // That measurement ended: observed (`ok`, after Observe) or failed. When
  // ok, wakes the waiters it answered; when not, they wait for the next
  // measurement, at the usual pace.
  void MeasureEnds(bool ok);
  // Ends WaitForMeasure, now and from now on.
  void Close();

 private:
  const Clock* const base_;
  // Held while waiters are called (before mu_): Cancel takes it.
  absl::Mutex notify_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;
  std::optional<absl::Duration> offset_ ABSL_GUARDED_BY(mu_);
  std::optional<Reading> last_ ABSL_GUARDED_BY(mu_);
  // Requests the running measurement does not answer, and those it does.
  absl::flat_hash_set<Waiter*> waiting_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Waiter*> measuring_ ABSL_GUARDED_BY(mu_);
  // A Request() since the last measurement started.
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_DB_CLOCK_H_
