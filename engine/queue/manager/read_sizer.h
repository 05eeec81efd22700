// ReadSizer: how many rows a table's next read may bring within a byte
// budget, judged by the largest row the last read that found rows brought.
// Before any read brought one the size is unknown and the count unbounded:
// the store cuts that read at the cache's bytes (cache_max_bytes).
//
// Example:
//   ReadSizer sizer(options.cache_max_bytes);
//   int64_t limit = sizer.RowsFor(free_bytes);  // at least 1
//   rows = store->PollDue(now, limit);
//   if (sizer.Note(rows)) ...  // the store cut the read at its bound
//
// Errors: none. Thread-safety: thread-compatible; the owning
// MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_READ_SIZER_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_READ_SIZER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/queue/message.h"

namespace msgq {

class ReadSizer {
 public:
  // `max_bytes`: the bytes at which the store cuts a read.
  explicit ReadSizer(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Rows of the largest size last read that fit in `bytes`: 1..INT32_MAX
  // (INT32_MAX before any read brought a row).
  int64_t RowsFor(size_t bytes) const;
  // Notes the rows a read brought (for the next read's size; a read that
  // brought none changes nothing). True when they reached max_bytes: the
  // store cut the read there.
  bool Note(const std::vector<Message>& rows);

 private:
  const size_t max_bytes_;
  // Message::WireBytes of the largest row of the last read with rows.
  size_t largest_row_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_READ_SIZER_H_
