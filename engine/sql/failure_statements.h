// FailureStatements: the SQL text of failure handling
// (docs/tables.md#when-work-fails) for one message table: nacks, extends,
// redrives and the dead-row reads, as MysqlMessageStore runs them
// (message_store.h states their contract).
//
// States of a row: acked (time_acked NOT NULL), pending (time_acked NULL,
// time_next NOT NULL), dead (time_acked NULL, time_next NULL). Every
// statement that changes a delivery (nack, extend) matches only pending rows
// whose epoch is still the delivery's epoch + 1, so a stale holder, an acked
// row and a dead row are never changed. Statements that take an id list are
// given as an InList (prefix, suffix) for MysqlMessageStore::InListStatements,
// which validates each id (sql_literal.h) and splits the list to fit
// max_allowed_packet.
//
// A reason becomes last_error only when the table has that column and the
// reason is not empty. Reasons are arbitrary bytes from clients: invalid
// UTF-8 is replaced by U+FFFD, characters the column's character set cannot
// hold are replaced too (LastErrorText: a strict sql_mode would otherwise
// refuse the whole nack, error 1366; last_error_text.h), the text is cut to the
// column's size in characters, and it is written as an _utf8mb4 X'..' hex
// literal, so no quote, backslash or byte sequence can change the statement
// whatever the sql_mode.
//
// Example:
//   FailureStatements sql(table, "`db`.`t`");
//   for (const InList& in : sql.Nack(now, epoch, std::nullopt, "boom")) ...
//
// Thread-compatible: const methods may run concurrently; the repertoire is
// set before use.
#ifndef MSGQ_ENGINE_SQL_FAILURE_STATEMENTS_H_
#define MSGQ_ENGINE_SQL_FAILURE_STATEMENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/last_error_text.h"
#include "engine/message_table.h"

namespace msgq {

// A statement `prefix <id literals, comma-separated> suffix`.
struct InList {
  std::string prefix;
  std::string suffix;
  // The rows it changes are counted as dead (else as retried, extended or
  // redriven).
  bool counts_dead = false;
};

// The condition the purges' DELETEs add on a table with msgq_dedup_window
// (docs/design/dedup.md): " AND (`dedup_key` IS NULL OR `time_created` IS
// NULL OR `time_created` < now - window)", so a row whose key is still in
// its window stays; "" when `dedup_window_ns` is 0.
std::string KeepDedupKeys(int64_t dedup_window_ns, int64_t now);

class FailureStatements {
 public:
  // `quoted_table` is `db`.`t` as written into SQL.
  FailureStatements(const MessageTable& table, std::string quoted_table);

  // The repertoire of the last_error column (kUnicode until set).
  void set_last_error_repertoire(Repertoire r) { repertoire_ = r; }

  // The statements of the nacks of one (epoch, time_next): for time_next =
  // nullopt one that kills the rows; for a retry, first one that kills the
  // rows past msgq_max_attempts or msgq_max_age (only when one is set), then
  // one that sets time_next on the rest.
  std::vector<InList> Nack(int64_t now, int64_t epoch,
                           std::optional<int64_t> time_next,
                           absl::string_view reason) const;
  // Deliveries of one epoch get time_next.
  InList Extend(int64_t epoch, int64_t time_next) const;
  // The listed dead rows become due at `now` with epoch 0.
  InList Redrive(int64_t now) const;
  // Every dead row becomes due at `now` with epoch 0.
  std::string RedriveAll(int64_t now) const;

  // Needs has_time_dead (the caller checks). `cutoff` is now -
  // msgq_dead_retention; with msgq_dedup_window, rows whose key is in its
  // window at that now stay (KeepDedupKeys).
  std::string PurgeDead(int64_t cutoff, int limit) const;
  std::string CountDead() const;
  // `after_literal` is the validated literal of the last id of the previous
  // page, or empty for the first page. Columns: id, epoch, then last_error,
  // time_dead, time_created for those the table has (see the *_column()).
  std::string ListDead(absl::string_view after_literal, int limit) const;
  // Column index of each optional column in ListDead's rows; -1 without it.
  int last_error_column() const { return last_error_column_; }
  int time_dead_column() const { return time_dead_column_; }
  int time_created_column() const { return time_created_column_; }

 private:
  // `time_next` = NULL[, `time_dead` = now][, `last_error` = ...]
  std::string DeadSet(int64_t now, absl::string_view reason) const;
  // `, last_error = LEFT(<literal>, n)` or "" (no column, empty reason).
  std::string LastErrorSet(absl::string_view reason) const;

  const std::string quoted_table_;
  const bool has_time_dead_;
  const int last_error_chars_;
  const int max_attempts_;
  // msgq_max_age in ns (0 = unlimited); needs time_created.
  const int64_t max_age_ns_;
  const int64_t dead_retention_ns_;
  // msgq_dedup_window in ns (0 = none).
  const int64_t dedup_window_ns_;
  Repertoire repertoire_ = Repertoire::kUnicode;
  int last_error_column_ = -1;
  int time_dead_column_ = -1;
  int time_created_column_ = -1;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_FAILURE_STATEMENTS_H_
