// PendingRequests: the requests a table's manager admitted and has not yet
// taken into a round: acks, nacks (and msgq's own deaths), extends,
// redrives and dead lists, each with the callback that answers it. It
// bounds them (at most `max_requests` waiting, at most `max_ids` ids
// admitted and not settled) and hands them to a round with their writes.
//
// Example:
//   PendingRequests requests(10000, 200000);
//   absl::Status s = requests.Admit(ids.size(), log_name);  // under the lock
//   if (s.ok()) requests.Add(PendingAck{std::move(ticket), std::move(done)});
//   ...
//   ManagerRound round;
//   requests.TakeAcks(round);    // round.acks, round.writes.ack_groups
//   requests.TakeOthers(round);  // nacks, extends, redrives, dead lists
//   ...                          // the write ran
//   requests.Settled(ids);       // per request answered
//
// Admit returns RESOURCE_EXHAUSTED when either bound is reached; nothing
// else fails. Answer() runs callbacks: call it without locks held.
// Thread-safety: thread-compatible. The owning MessageManager guards it
// with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_PENDING_REQUESTS_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_PENDING_REQUESTS_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/queue/manager/manager_round.h"

namespace msgq {

class PendingRequests {
 public:
  PendingRequests(size_t max_requests, size_t max_ids);

  // Admits a request of `ids` ids: OK, and the ids count until Settled();
  // RESOURCE_EXHAUSTED ("too many requests waiting for <name>") when
  // max_requests are waiting or the ids would pass max_ids (nothing
  // counted then).
  absl::Status Admit(size_t ids, absl::string_view name);
  // Queues an admitted request (a PendingNack of msgq's own deaths, with a
  // null callback, needs no admission).
  void Add(PendingAck ack);
  void Add(PendingNack nack);
  void Add(PendingExtend extend);
  void Add(PendingRedrive redrive);
  void Add(PendingDeadList list);
  // `ids` admitted ids were answered (their request settled).
  void Settled(size_t ids);

  bool acks_waiting() const { return !acks_.empty(); }
  // Nacks, deaths, extends, redrives or dead lists are waiting.
  bool others_waiting() const;
  bool empty() const { return !acks_waiting() && !others_waiting(); }
  size_t admitted_ids() const { return admitted_ids_; }

  // Moves the waiting acks to `round.acks` (which must be empty) and their
  // ids to round.writes.ack_groups.
  void TakeAcks(ManagerRound& round);
  // Moves the waiting nacks, extends, redrives and dead lists to `round`,
  // and their write groups to round.writes.
  void TakeOthers(ManagerRound& round);
  // Moves every request out (stopping) and forgets the admitted ids.
  ManagerRound TakeAll();
  // Answers each request of `round` with `status` (msgq's own deaths have
  // nobody to answer).
  static void Answer(ManagerRound& round, const absl::Status& status);

 private:
  const size_t max_requests_;
  const size_t max_ids_;
  std::vector<PendingAck> acks_;
  std::vector<PendingNack> nacks_;
  std::vector<PendingExtend> extends_;
  std::vector<PendingRedrive> redrives_;
  std::vector<PendingDeadList> dead_lists_;
  size_t admitted_ids_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_PENDING_REQUESTS_H_
