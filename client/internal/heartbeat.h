// Heartbeat keeps the deliveries of still-running handlers from timing out:
// while a delivery is registered (Begin..End) it is extended, one
// MessageExtend per delivery, every `fraction * ack_wait`, each time by
// ack_wait, so the server sends it to nobody else meanwhile.
//
// Timing, for a delivery received at R with the table's ack_wait W:
//   - the server's deadline starts as R + W;
//   - an extend is due at R + fraction*W, then fraction*W after each extend
//     (or failed try);
//   - each extend asks for min(W, R + W + max_extension - now): a delivery
//     is never held past R + W + max_extension; once that leaves nothing to
//     ask for, extending stops and the delivery times out as usual.
// An extend that counts 0 means the delivery was lost (its deadline passed
// and it was sent again, or it was settled): it is counted in stats().lost
// and never extended again. A failed extend is reported to `on_error` and
// tried again at the next interval.
//
// ack_wait is unknown until SetAckWait(); until then nothing is extended.
// Deliveries are extended one call each (not batched) because MessageExtend
// only counts the rows it moved: a batch could not say which one was lost.
// Handlers run at most `concurrency` at a time, so these calls are few.
//
// Time comes from the injected clock. Tests drive it by hand with Tick();
// Start() runs a thread that calls Tick() when the next extend is due, which
// assumes the clock follows real time (absl::Now, the default).
//
// Example:
//   Heartbeat heartbeat(options, [&](const Delivery& d, absl::Duration t) {
//     return client.Extend(table, {d}, t);
//   }, /*on_error=*/nullptr);
//   heartbeat.SetAckWait(absl::Seconds(30));
//   heartbeat.Start();
//   Heartbeat::Ticket ticket = heartbeat.Begin(msg.delivery(), received_at);
//   Handle(msg);
//   heartbeat.End(ticket);
//
// Thread-safe. The extend and error callbacks run on the thread calling
// Tick(), never under the heartbeat's lock; End() may be called while an
// extend of that delivery is in flight (its answer is then only counted).
//
// Internal to the client library (client/internal/ is not installed; the
// public API is client/*.h).
#ifndef MSGQ_CLIENT_INTERNAL_HEARTBEAT_H_
#define MSGQ_CLIENT_INTERNAL_HEARTBEAT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "msgq/message.h"
#include "msgq/subscriber_options.h"
#include "msgq/table_ref.h"
#include "msgq/v1/messaging.pb.h"

namespace msgq {

// The ack_wait of `table` among `tables` (a ListTables answer): the first
// loaded table of that name, in `table.keyspace` unless that is empty.
// nullopt when there is none or its ack_wait is not positive.
std::optional<absl::Duration> AckWaitOf(
    const std::vector<v1::TableStatus>& tables, const TableRef& table);

class Heartbeat {
 public:
  using ExtendFn = std::function<absl::StatusOr<int64_t>(
      const Delivery& delivery, absl::Duration duration)>;
  using ErrorFn = std::function<void(const absl::Status& status)>;
  using Clock = std::function<absl::Time()>;
  using Ticket = uint64_t;

  struct Stats {
    int64_t extended = 0;  // extends that moved the delivery
    int64_t lost = 0;      // extends that counted 0
    int64_t errors = 0;    // extends that failed
  };

  // `extend` is required; `on_error` may be empty.
  Heartbeat(const HeartbeatOptions& options, ExtendFn extend, ErrorFn on_error,
            Clock clock = &absl::Now);
  // Close()s.
  ~Heartbeat();

  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // False when options.max_extension is zero: Begin() then tracks nothing.
  bool enabled() const { return enabled_; }

  // The table's ack_wait; nullopt or a non-positive value = unknown (no
  // extends until known again).
  void SetAckWait(std::optional<absl::Duration> ack_wait);

  // Starts the thread that calls Tick() when an extend is due. Once only.
  void Start();
  // Stops that thread (waiting for an extend in flight). Idempotent.
  void Close();

  // Extends `delivery`, received at `received`, until End(ticket).
  Ticket Begin(Delivery delivery, absl::Time received);
  void End(Ticket ticket);

  // Sends every extend due at clock() and waits for the answers.
  void Tick();
  // When the next extend is due (InfiniteFuture if none can be).
  absl::Time NextDue() const;

  Stats stats() const;

 private:
  struct Entry {
    Delivery delivery;
    absl::Time received;
    absl::Time last_try;  // the last extend (or try), or `received`
    bool in_flight = false;
    bool exhausted = false;  // held as long as max_extension allows
  };
  struct Due {
    Ticket ticket;
    Delivery delivery;
    absl::Duration duration;
  };

  absl::Duration Interval() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time NextDueLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run();

  // Constant after construction.
  const double fraction_;
  const absl::Duration max_extension_;
  const bool enabled_;
  const ExtendFn extend_;
  const ErrorFn on_error_;
  const Clock clock_;

  mutable absl::Mutex mu_;
  absl::Duration ack_wait_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::flat_hash_map<Ticket, Entry> entries_ ABSL_GUARDED_BY(mu_);
  Ticket next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  // Bumped whenever the next due time may have moved earlier.
  int64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_INTERNAL_HEARTBEAT_H_
