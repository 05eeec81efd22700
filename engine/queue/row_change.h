// RowChange: a committed change to a message table row, as the binlog
// reports it: what the queue learns from the binlog (the decoder in
// engine/binlog/ makes them).
#ifndef MSGQ_ENGINE_QUEUE_ROW_CHANGE_H_
#define MSGQ_ENGINE_QUEUE_ROW_CHANGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/queue/binlog_position.h"
#include "engine/queue/message.h"

namespace msgq {

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
  // What the change did to the row's state, for exact counts by state
  // (message_counts.h): `inserted` for a new row; `sent`: the image's
  // epoch > 0; for an update whose before image carries time_next,
  // time_acked and epoch, `has_before` with that image's values (false
  // when binlog_row_image leaves them out).
  bool inserted = false;
  bool sent = false;
  bool has_before = false;
  std::optional<int64_t> time_next_before;
  bool acked_before = false;
  bool sent_before = false;
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
  // The GTID ("domain-server-sequence") of the event group that made the
  // change ("" when the stream did not name one): a write of msgq's is
  // known by the GTID its commit reported (WriteResult::gtid).
  std::string gtid;
  // Where its rows event ends in the binlog (unknown when the stream did
  // not name the file): compared with a read's snapshot position.
  BinlogPosition position;
};

// The message a change's after image makes: id, priority, time_next (0
// when NULL), epoch, time_created, fair_key and the packed row (null when
// the change carries no image).
Message MessageOf(const RowChange& change);

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_ROW_CHANGE_H_
