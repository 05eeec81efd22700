// What a MessageManager's round takes under the manager's lock and works
// on without it: the requests waiting for MySQL (acks, nacks, extends,
// redrives, dead lists, each with the callback that answers it) and the
// postpones owed. Plain values, used only by MessageManager.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_ROUND_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_ROUND_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/queue/message_store.h"
#include "engine/queue/round_executor.h"
#include "engine/queue/round_scheduler.h"
#include "engine/queue/settlement_ledger.h"

namespace msgq {

// One delivery: the id and the epoch it was streamed with.
struct ManagerDelivery {
  std::string id;
  int64_t epoch = 0;
};
struct ManagerNackRequest {
  std::vector<ManagerDelivery> deliveries;
  // Retry after this long; nullopt: the table's backoff for the epoch.
  std::optional<absl::Duration> delay;
  std::string reason;
  bool dead = false;  // dead now
};

using ManagerCountCallback = std::function<void(absl::StatusOr<int64_t>)>;
using ManagerNackCallback = std::function<void(absl::StatusOr<NackCount>)>;
using ManagerDeadCallback =
    std::function<void(absl::StatusOr<std::vector<DeadRow>>)>;

// An ack request, or (done is null) the part of one a row lock held back
// after the request was answered (WriteResult::locked).
struct PendingAck {
  SettlementLedger::SettleTicket ticket;
  ManagerCountCallback done;
};
// A nack, or msgq's own deaths (done is null).
struct PendingNack {
  SettlementLedger::SettleTicket ticket;
  NackGroup group;
  ManagerNackCallback done;
};
struct PendingExtend {
  SettlementLedger::SettleTicket ticket;
  ExtendGroup group;
  ManagerCountCallback done;
};
struct PendingRedrive {
  RedriveGroup group;
  ManagerCountCallback done;
};
struct PendingDeadList {
  std::string after_id;
  int limit = 0;
  ManagerDeadCallback done;
};
// A task of the RoundExecutor that runs a function (the ack lane).
class CallbackTask final : public RoundExecutor::Task {
 public:
  explicit CallbackTask(std::function<absl::Time()> run)
      : run_(std::move(run)) {}
  absl::Time RunRound() override { return run_(); }

 private:
  const std::function<absl::Time()> run_;
};

// What one round writes and reads, taken under the lock.
struct ManagerRound {
  int64_t now = 0;  // wall clock, Unix ns
  absl::Time mono;  // monotonic clock
  WriteBatch writes;
  // writes.postpones, by index: the postpone taken for each. From
  // `first_retried` on, those a row lock held back before.
  std::vector<SettlementLedger::Postpone> postponed;
  size_t first_retried = 0;
  std::vector<PendingAck> acks;
  std::vector<PendingNack> nacks;
  std::vector<PendingExtend> extends;
  std::vector<PendingRedrive> redrives;
  std::vector<PendingDeadList> dead_lists;
  RoundScheduler::Round round;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_ROUND_H_
