// Message: one row of a message table as the engine holds it in memory.
//
// `row` carries the streamed columns already packed the way the wire wants
// them (text-protocol values back to back, lengths with -1 for NULL), shared
// so that handing a message to a subscriber copies no payload.
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msgq {

struct PackedRow {
  std::vector<int64_t> lengths;  // -1 for NULL
  std::string values;
};

struct Message {
  std::string id;  // canonical text form, as streamed in column 0
  int64_t priority = 0;
  int64_t time_next = 0;  // Unix epoch ns
  int64_t epoch = 0;      // sends so far
  // The time_created column (Unix ns) when the table has one and the read
  // asked for it (msgq_max_age); 0 otherwise.
  int64_t time_created = 0;
  // When the manager handed it to a subscriber (Unix ns; 0 = not sent), so
  // a batch handed back later is known to be still this send's.
  int64_t sent_at = 0;
  // When the binlog showed the commit that made it due (Unix ns; 0 = found
  // by a poll), until its first handoff (commit_to_send).
  int64_t seen_at = 0;
  // msgq_fair_by or msgq_concurrency_by (the same column when both): the
  // row's value of that key column as MySQL's text form (nullopt for NULL);
  // unused (nullopt) on other tables.
  std::optional<std::string> fair_key;
  std::shared_ptr<const PackedRow> row;
  // The bytes of the streamed columns a read left out because the row was
  // larger than the store reads (its large columns are NULL in `row`); 0
  // when the row was read whole. Such a row is never sent.
  size_t unread_bytes = 0;

  // Bytes the row takes on the wire (values plus a length per column).
  size_t WireBytes() const {
    return row == nullptr ? 0 : row->values.size() + 10 * row->lengths.size();
  }
};

// A batch handed to one subscriber.
using MessageBatch = std::vector<Message>;

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_H_
