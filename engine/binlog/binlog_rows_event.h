// The rows events of BinlogDecoder (binlog_decoder.h): WRITE_ROWS,
// UPDATE_ROWS and DELETE_ROWS, v1 and v2, of a message table, decoded into
// RowChanges: the bookkeeping columns of each row image and, for a due row,
// its streamed columns rendered as a SELECT would show them
// (row_image_text.h) unless their values hold more than 4 MiB (such a row
// is read by id). The decoder keeps the table map and the event
// stream's state; this is the per-event part, pure and stateless.
//
// Input is untrusted, as for BinlogDecoder: malformed bytes are DATA_LOSS,
// never an out-of-bounds read.
//
// Internal to BinlogDecoder (and its tests).
#ifndef MSGQ_ENGINE_BINLOG_BINLOG_ROWS_EVENT_H_
#define MSGQ_ENGINE_BINLOG_BINLOG_ROWS_EVENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/binlog/bookkeeping_columns.h"
#include "engine/queue/row_change.h"

namespace msgq::binlog {

// A table as its TABLE_MAP event described it.
struct MappedTable {
  std::string db, table;
  std::string types;              // one byte per column
  std::vector<uint16_t> meta;     // per column
  std::vector<bool> is_unsigned;  // from optional metadata, may be empty
  // Set for a message table (BinlogDecoder::ColumnsLookup).
  std::optional<BookkeepingColumns> columns;
};

// Which rows event: v2 has an extra-data block; an update has a before and
// an after image per row; a delete reports its (before) image as deleted.
struct RowsEventKind {
  bool v2 = false;
  bool update = false;
  bool deleted = false;
};

// Decodes `body`, a rows event of the message table `table` (its columns
// set) after the 6-byte table id and 2-byte flags, and appends a RowChange
// per row image with a non-NULL id (an update's after image) to `changes`,
// in event order; event_time is left 0. A table whose bookkeeping columns
// are not in the event's column count gives no change. DATA_LOSS for a
// malformed body; UNIMPLEMENTED for a column type that cannot be measured
// or an id type not decoded (the message names the table). On error
// `changes` may hold the rows before the fault (the caller drops them).
absl::Status DecodeRowsEvent(RowsEventKind kind, absl::string_view body,
                             const MappedTable& table,
                             std::vector<RowChange>* changes);

}  // namespace msgq::binlog

#endif  // MSGQ_ENGINE_BINLOG_BINLOG_ROWS_EVENT_H_
