// RowChange: a committed change to a message table row, as the binlog
// reports it, and where a table's bookkeeping columns sit in a row image.
#ifndef MSGQ_ENGINE_BINLOG_ROW_CHANGE_H_
#define MSGQ_ENGINE_BINLOG_ROW_CHANGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/binlog/row_image_text.h"
#include "engine/queue/message.h"

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
  uint32_t epoch = 0;
  // Row images (--binlog_discovery=image): when `streamed` is not empty the
  // decoder renders the streamed columns (id first) of a due row's after
  // image into RowChange::row, with the time_created and fair columns that
  // go with them. Empty: rows are read back by id.
  struct Rendered {
    uint32_t ordinal = 0;
    binlog::TextForm form = binlog::TextForm::kNone;
  };
  std::vector<Rendered> streamed;
  std::optional<uint32_t> time_created;  // integer column
  std::optional<Rendered> fair;          // msgq_fair_by's column
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
  // The streamed columns packed as a read packs them, when the table renders
  // row images and every streamed column of this after image could be
  // rendered (BookkeepingColumns::streamed); null otherwise. Set only for
  // unacked rows with a time_next, and not for updates that raised the
  // epoch (msgq's own postpones).
  std::shared_ptr<const PackedRow> row;
  int64_t epoch = 0;         // with `row`
  int64_t time_created = 0;  // with `row`, when the table has the column
  std::optional<std::string> fair_key;  // with `row`, msgq_fair_by's text
  // The rows event's timestamp (Unix seconds, the server's clock: when the
  // statement started), to judge how far behind the binlog is read.
  int64_t event_time = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_ROW_CHANGE_H_
