// Parsing of a message table's comment into TableSettings.
//
// A table is a message table when its comment contains "vitess_message". The
// comment is split on ',' and each piece on '='; spaces around keys and values
// are ignored. Durations are seconds and may be fractional ("0.5"); counts are
// integers. The directives and their meaning are listed in
// docs/tables.md#schema-and-directives.
//
// Example:
//   absl::StatusOr<TableSettings> s = ParseDirectives(
//       "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
//       "vt_cache_size=10000,vt_poller_interval=30");
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_DIRECTIVES_H_
#define MSGQ_ENGINE_DIRECTIVES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/table_settings.h"

namespace msgq {

// The largest values a table may ask for. Above them a table fails to load
// with a clear error instead of overflowing a statement's LIMIT, memory, or
// int64 nanosecond times (now + 100 years still fits; 292 years would not).
inline constexpr int kMaxCacheSize = 1000000;               // vt_cache_size
inline constexpr int kMaxBatchSize = 10000;                 // vt_batch_size
inline constexpr int64_t kMaxDurationSeconds = 3153600000;  // 100 years
inline constexpr int kMaxAttemptsLimit = 1000000;           // msgq_max_attempts
inline constexpr int kMaxPartitionsAhead = 1000;  // msgq_partitions_ahead
inline constexpr int kMaxConcurrency = 10000;     // msgq_concurrency

// True when `comment` marks a message table (contains "vitess_message").
bool IsMessageTableComment(absl::string_view comment);

// Parses the directives of a message table's comment.
// Returns INVALID_ARGUMENT, with a message naming the directive, when: a
// required directive (vt_ack_wait, vt_purge_after, vt_batch_size,
// vt_cache_size, vt_poller_interval) is missing; a value is empty, not a
// number, zero or negative, or not an integer where a count is expected; a
// count or duration is above its maximum (kMaxCacheSize, kMaxBatchSize,
// kMaxDurationSeconds); a
// directive appears twice; vt_min_backoff > vt_max_backoff; vt_message_cols is
// empty or does not start with `id`; an unknown vt_* or msgq_* directive is
// present; msgq_concurrency_by without msgq_concurrency or the reverse;
// msgq_concurrency_by with msgq_order_by, or with a msgq_fair_by of another
// column. msgq's own directives (msgq_max_attempts, msgq_max_age,
// msgq_dead_retention, msgq_dedup_window) are optional; Vitess ignores them.
// Pieces that start with neither "vt_" nor "msgq_" (other than
// "vitess_message") are ignored, so applications may keep their own notes in
// the comment. Column existence is not checked here (see message_table.h).
absl::StatusOr<TableSettings> ParseDirectives(absl::string_view comment);

}  // namespace msgq

#endif  // MSGQ_ENGINE_DIRECTIVES_H_
