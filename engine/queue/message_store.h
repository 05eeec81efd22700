// MessageStore: the SQL a message manager needs, behind a seam, so that the
// manager's logic is unit-tested against an in-memory fake.
//
// Reads are one statement per call unless the id list must be split to stay
// under max_allowed_packet. Times are Unix epoch nanoseconds. Implementations
// are used by one thread at a time (the table's manager thread) and need not
// be thread-safe. Errors: UNAVAILABLE when MySQL is unreachable (retry
// later), ABORTED for a deadlock or lock wait timeout (retry), others as
// MysqlConnection maps them (permanent).
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_STORE_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/queue/message.h"

namespace msgq {

// Send bookkeeping for one message: set time_next and bump epoch.
struct Postponement {
  std::string id;
  int64_t time_next = 0;
};

// What Write applied. `acks[i]` is ack group i's outcome: how many rows
// went from unacked to acked, or why the group was not applied (nothing of
// it was): a permanent error of its own (e.g. INVALID_ARGUMENT for an id the
// column cannot hold or whose statement cannot fit in max_allowed_packet,
// INTERNAL for a statement the server refused). `postpones` is OK, or the
// permanent error for which none of the postpones was applied. A failing
// group never keeps the others from committing.
struct WriteResult {
  std::vector<absl::StatusOr<int64_t>> acks;
  absl::Status postpones;
};

struct WriteBatch {
  int64_t now = 0;
  // Postponed in one statement per distinct time_next (usually one), split
  // when longer than max_allowed_packet allows.
  std::vector<Postponement> postpones;
  // Each group (one MessageAck request) is acked by its own statement(s),
  // so the count of rows it changed is reported per group.
  std::vector<std::vector<std::string>> ack_groups;
};

class MessageStore {
 public:
  virtual ~MessageStore() = default;

  // Unacked rows with time_next <= now, ordered by priority, time_next, id;
  // at most `limit` (an implementation may read fewer: MysqlMessageStore
  // clamps it to [0, kMaxPollRows]).
  virtual absl::StatusOr<std::vector<Message>> PollDue(int64_t now,
                                                       int64_t limit) = 0;

  // The rows among `ids` that are unacked with time_next <= now (a primary
  // key lookup, used when the binlog names new or changed rows).
  virtual absl::StatusOr<std::vector<Message>> FetchDue(
      const std::vector<std::string>& ids, int64_t now) = 0;

  // The earliest time_next > now among unacked rows; nullopt when none.
  virtual absl::StatusOr<std::optional<int64_t>> NextDueAfter(int64_t now) = 0;

  // Postpones (time_next = given, epoch = epoch + 1) and acks (time_acked =
  // now, time_next = NULL) only rows still unacked, in one transaction. The
  // postpones (as a whole) and each ack group are the units of failure: a
  // unit that fails permanently is left out and reported in WriteResult,
  // and the other units commit together. Postponed ids that the id column
  // cannot hold are skipped (never written into SQL) and logged. Non-OK only
  // for UNAVAILABLE (connection lost) or ABORTED (deadlock, lock wait
  // timeout); then nothing at all was applied.
  virtual absl::StatusOr<WriteResult> Write(const WriteBatch& batch) = 0;

  // Deletes at most `limit` rows acked before `cutoff`; returns how many.
  virtual absl::StatusOr<int64_t> Purge(int64_t cutoff, int limit) = 0;

  // The manager's round is over: give back whatever connection the round
  // borrowed, so an idle table holds none.
  virtual void EndRound() {}
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_STORE_H_
