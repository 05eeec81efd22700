// BookkeepingColumns: where a message table's bookkeeping columns sit in
// its binlog row images, and which streamed columns the decoder can render
// from an image as a read would return them. Built once per table from its
// definition (BookkeepingOf) and handed to the binlog decoder.
//
// Example:
//   BookkeepingColumns cols = BookkeepingOf(table, /*row_images=*/true);
//   if (cols.streamed.empty()) { /* due rows are read back by id */ }
//
// Pure functions; thread-safe.
#ifndef MSGQ_ENGINE_BINLOG_BOOKKEEPING_COLUMNS_H_
#define MSGQ_ENGINE_BINLOG_BOOKKEEPING_COLUMNS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/binlog/row_image_text.h"
#include "engine/message_table.h"

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

// Where the bookkeeping columns sit in the table's rows (binlog images).
// With `row_images`, also the streamed columns to render from a due row's
// image (BookkeepingColumns::streamed), when every one of them (and the
// msgq_fair_by column) has a reproducible text form and the table has
// neither msgq_order_by (whose rows must be read to check headship) nor
// msgq_concurrency_by (whose polls read at most a key's free slots, and
// whose images carry no key for the gate: the manager polls for such a
// row instead, message_manager_binlog.cc).
BookkeepingColumns BookkeepingOf(const MessageTable& table,
                                 bool row_images = false);

// How a column's text form can be rebuilt from a binlog row image
// (engine/binlog/row_image_text.h), judged from information_schema.
binlog::TextForm TextFormOf(const Column& column);

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_BOOKKEEPING_COLUMNS_H_
