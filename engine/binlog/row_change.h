// RowChange: a committed change to a message table row, as the binlog
// reports it, and where a table's bookkeeping columns sit in a row image.
#ifndef MSGQ_ENGINE_BINLOG_ROW_CHANGE_H_
#define MSGQ_ENGINE_BINLOG_ROW_CHANGE_H_

#include <cstdint>
#include <optional>
#include <string>

namespace msgq {

// Where a message table's bookkeeping columns are, by ordinal (0-based).
struct BookkeepingColumns {
  uint32_t column_count = 0;
  uint32_t id = 0;
  uint32_t priority = 0;
  uint32_t time_next = 0;
  uint32_t time_acked = 0;
  // The id column is an unsigned integer (decoded as such unless the table
  // map's optional metadata says otherwise).
  bool id_unsigned = false;
  bool priority_unsigned = false;  // likewise for the priority column
};

// One committed row change, as its after image says (the before image for
// deletes).
struct RowChange {
  bool deleted = false;
  std::string id;  // text form, as the stream sends it
  int64_t priority = 0;
  std::optional<int64_t> time_next;
  std::optional<int64_t> time_acked;
  // An UPDATE that acked the row: time_acked NULL in the before image and
  // set in the after image (false for inserts, deletes and other updates).
  bool newly_acked = false;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_ROW_CHANGE_H_
