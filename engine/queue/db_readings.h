// DbReadings: readings of MySQL's clock, taken on request, for the due
// times a MessageManager only estimates.
//
// A manager's clock (DbClock in the engine) estimates MySQL's clock from a
// measurement a second; a step of MySQL's clock makes the estimate wrong
// until the next one. So the estimate only says when to look: a due time
// it reached is acted on (a poll) only once a reading confirms it, that is
// a reading of MySQL's clock at or after the due time, taken by a query
// sent after the due time became known (an older reading may predate a
// step back). Last() is the latest reading; Request() asks for one now and
// wakes the waiter once it is taken (docs/design/due-clock.md).
//
// Example:
//   class Wake : public DbReadings::Waiter {
//     void ReadingTaken() override { /* lock, schedule a round */ }
//   };
//   readings->Request(&wake);            // returns at once
//   ...ReadingTaken() runs after the next reading...
//   std::optional<DbReadings::Reading> r = readings->Last();
//   bool confirmed = r && r->db_ns >= due_ns && r->sent >= due_known_at;
//   readings->Cancel(&wake);             // before `wake` is destroyed
//
// Thread-safety: implementations are thread-safe. ReadingTaken() runs on
// the implementation's thread with none of its locks held; it must not
// block or call Request/Cancel.
#ifndef MSGQ_ENGINE_QUEUE_DB_READINGS_H_
#define MSGQ_ENGINE_QUEUE_DB_READINGS_H_

#include <cstdint>
#include <optional>

#include "absl/time/time.h"

namespace msgq {

class DbReadings {
 public:
  // MySQL said its clock was `db_ns` (Unix ns) in answer to a query sent at
  // the monotonic time `sent`: the clock read `db_ns` after `sent`.
  struct Reading {
    int64_t db_ns = 0;
    absl::Time sent;
  };
  class Waiter {
   public:
    virtual ~Waiter() = default;
    virtual void ReadingTaken() = 0;
  };

  virtual ~DbReadings() = default;
  // The latest reading; nullopt before the first.
  virtual std::optional<Reading> Last() const = 0;
  // Asks for a reading as soon as possible and returns at once (never
  // blocks on MySQL). `waiter->ReadingTaken()` runs once, after a reading
  // whose query was sent after this call; more calls before then are one
  // request. A reading that fails (MySQL away) is retried at the usual
  // pace, and the waiter keeps waiting.
  virtual void Request(Waiter* waiter) = 0;
  // Forgets `waiter`'s request; a ReadingTaken() of it in progress has
  // returned when this returns.
  virtual void Cancel(Waiter* waiter) = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_DB_READINGS_H_
