// MessageStore: the SQL a message manager needs, behind a seam, so that the
// manager's logic is unit-tested against an in-memory fake.
//
// Every method is one statement per batch (Write is one transaction). Times
// are Unix epoch nanoseconds. Implementations are used by one thread at a
// time (the table's manager thread) and need not be thread-safe.
// Errors: UNAVAILABLE when MySQL is unreachable (retry later), others as
// MysqlConnection maps them.
#ifndef MSGQ_ENGINE_MESSAGE_STORE_H_
#define MSGQ_ENGINE_MESSAGE_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/message.h"

namespace msgq {

// Send bookkeeping for one message: set time_next and bump epoch.
struct Postponement {
  std::string id;
  int64_t time_next = 0;
};

struct WriteBatch {
  int64_t now = 0;
  // Postponed in one statement per distinct time_next (usually one).
  std::vector<Postponement> postpones;
  // Each group (one MessageAck request) is acked by one statement, so the
  // count of rows it changed is reported per group.
  std::vector<std::vector<std::string>> ack_groups;
};

class MessageStore {
 public:
  virtual ~MessageStore() = default;

  // Unacked rows with time_next <= now, ordered by priority, time_next, id;
  // at most `limit`.
  virtual absl::StatusOr<std::vector<Message>> PollDue(int64_t now,
                                                       int limit) = 0;

  // The rows among `ids` that are unacked with time_next <= now (a primary
  // key lookup, used when the binlog names new or changed rows).
  virtual absl::StatusOr<std::vector<Message>> FetchDue(
      const std::vector<std::string>& ids, int64_t now) = 0;

  // The earliest time_next > now among unacked rows; nullopt when none.
  virtual absl::StatusOr<std::optional<int64_t>> NextDueAfter(int64_t now) = 0;

  // Postpones (time_next = given, epoch = epoch + 1) and acks (time_acked =
  // now, time_next = NULL) only rows still unacked, all in one transaction:
  // on error nothing was applied. Returns, per ack group, how many rows went
  // from unacked to acked.
  virtual absl::StatusOr<std::vector<int64_t>> Write(
      const WriteBatch& batch) = 0;

  // Deletes at most `limit` rows acked before `cutoff`; returns how many.
  virtual absl::StatusOr<int64_t> Purge(int64_t cutoff, int limit) = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_MESSAGE_STORE_H_
