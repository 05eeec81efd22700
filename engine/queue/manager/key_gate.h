// KeyGate: msgq_concurrency_by as a table's manager uses it. It holds the
// table's ConcurrencyGate (concurrency_gate.h) when the table has one, and
// whether the gate's slots were loaded from MySQL since ownership was last
// gained: after a gain (startup, a lease, a lapse) other instances, or this
// one before a restart, may have rows in flight, so nothing is sent until a
// load that started after the gain completed. A table without
// msgq_concurrency_by has the gate off: it admits everything, holds no
// slot, and needs no load.
//
// Example:
//   KeyGate gate(settings.concurrency);   // under the manager's lock
//   gate.OwnershipGained();
//   std::optional<int64_t> ticket = gate.LoadTicket();
//   ...  // without the lock: rows = store->ReadInFlight(now)
//   gate.Load(rows, *ticket);             // ready() unless gained again
//   if (gate.ready() && gate.TryTake(m, now, until)) send(m);
//   if (gate.Release(id)) ...             // a slot freed: poll for more
//
// Errors: none. Thread-safety: thread-compatible; the owning
// MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_KEY_GATE_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_KEY_GATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/queue/concurrency_gate.h"
#include "engine/queue/message.h"
#include "engine/queue/message_store.h"

namespace msgq {

class KeyGate {
 public:
  // `limit`: msgq_concurrency; 0 (or less): the gate is off.
  explicit KeyGate(int limit);

  bool on() const { return gate_.has_value(); }
  // Sends may go: the gate is off, or loaded since the last gain.
  bool ready() const { return !on() || loaded_; }

  // Ownership was gained: the slots must be loaded again before sending
  // (the slots held stay: their messages may still be out).
  void OwnershipGained();
  // A load is needed (on and not loaded): the ticket to pass to Load().
  // nullopt when none is.
  std::optional<int64_t> LoadTicket() const;
  // `rows` in flight, read after LoadTicket() returned `ticket`, take their
  // slots; the gate is loaded unless ownership was gained again since
  // (another owner's sends may be missing from the rows).
  void Load(const std::vector<InFlightRow>& rows, int64_t ticket);

  // ConcurrencyGate's calls; when off, Admits and TryTake return true,
  // Release and ReleaseNacked false, Room nullopt, KeysAtLimit 0.
  bool Admits(const std::optional<std::string>& key, int64_t now);
  bool TryTake(const Message& m, int64_t now, int64_t until);
  bool Release(absl::string_view id);
  bool ReleaseNacked(absl::string_view id, int64_t epoch);
  void Extend(absl::string_view id, int64_t epoch, int64_t until);
  std::optional<KeyRoom> Room(int64_t now, int64_t unlimited);
  int64_t KeysAtLimit(int64_t now) const;

 private:
  std::optional<ConcurrencyGate> gate_;
  bool loaded_ = false;
  // Counts the gains, so that a load that raced one is not taken as
  // complete.
  int64_t generation_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_KEY_GATE_H_
