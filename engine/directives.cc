#include "engine/directives.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/directive_values.h"
#include "engine/status_macros.h"

namespace msgq {
namespace {

constexpr absl::string_view kMarker = "vitess_message";
constexpr absl::string_view kDirectivePrefix = "vt_";
// msgq's own directives; Vitess ignores them.
constexpr absl::string_view kMsgqPrefix = "msgq_";

constexpr absl::string_view kAckWait = "vt_ack_wait";
constexpr absl::string_view kPurgeAfter = "vt_purge_after";
constexpr absl::string_view kBatchSize = "vt_batch_size";
constexpr absl::string_view kCacheSize = "vt_cache_size";
constexpr absl::string_view kPollerInterval = "vt_poller_interval";
constexpr absl::string_view kMinBackoff = "vt_min_backoff";
constexpr absl::string_view kMaxBackoff = "vt_max_backoff";
constexpr absl::string_view kMessageCols = "vt_message_cols";
constexpr absl::string_view kMaxAttempts = "msgq_max_attempts";
constexpr absl::string_view kMaxAge = "msgq_max_age";
constexpr absl::string_view kDeadRetention = "msgq_dead_retention";
constexpr absl::string_view kDedupWindow = "msgq_dedup_window";
constexpr absl::string_view kRateLimit = "msgq_rate_limit";
constexpr absl::string_view kRateBurst = "msgq_rate_burst";
constexpr absl::string_view kOrderBy = "msgq_order_by";
constexpr absl::string_view kFairBy = "msgq_fair_by";
constexpr absl::string_view kConcurrencyBy = "msgq_concurrency_by";
constexpr absl::string_view kConcurrency = "msgq_concurrency";
constexpr absl::string_view kPartitionInterval = "msgq_partition_interval";
constexpr absl::string_view kPartitionsAhead = "msgq_partitions_ahead";
// Far above what one table can send; keeps the token arithmetic exact.
constexpr double kMaxRate = 1e9;

constexpr absl::string_view kKnownDirectives[] = {
    kAckWait,         kPurgeAfter,    kBatchSize,     kCacheSize,
    kPollerInterval,  kMinBackoff,    kMaxBackoff,    kMessageCols,
    kMaxAttempts,     kMaxAge,        kDeadRetention, kRateLimit,
    kRateBurst,       kOrderBy,       kFairBy,        kPartitionInterval,
    kPartitionsAhead, kConcurrencyBy, kConcurrency,   kDedupWindow,
};

// Directive name -> trimmed raw value. Views point into the comment.
using RawDirectives = absl::flat_hash_map<absl::string_view, absl::string_view>;

bool IsKnownDirective(absl::string_view key) {
  for (absl::string_view known : kKnownDirectives) {
    if (key == known) return true;
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> ParseMessageCols(
    absl::string_view value) {
  std::vector<std::string> cols;
  // Lowercased, because MySQL column names are case-insensitive.
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view piece : absl::StrSplit(value, '|')) {
    const absl::string_view col = absl::StripAsciiWhitespace(piece);
    if (col.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: \"%s\" has an empty column name", kMessageCols, value));
    }
    if (!seen.insert(absl::AsciiStrToLower(col)).second) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: \"%s\" names column %s twice", kMessageCols, value, col));
    }
    cols.emplace_back(col);
  }
  if (!absl::EqualsIgnoreCase(cols.front(), "id")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" must start with id", kMessageCols, value));
  }
  return cols;
}

// Splits the comment into vt_* and msgq_* directives, rejecting the
// malformed ones.
absl::StatusOr<RawDirectives> SplitDirectives(absl::string_view comment) {
  RawDirectives raw;
  for (absl::string_view piece : absl::StrSplit(comment, ',')) {
    const size_t eq = piece.find('=');
    const absl::string_view key =
        absl::StripAsciiWhitespace(piece.substr(0, eq));
    // Everything else is the marker or an application's own note.
    if (!absl::StartsWith(key, kDirectivePrefix) &&
        !absl::StartsWith(key, kMsgqPrefix)) {
      continue;
    }
    if (!IsKnownDirective(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown directive ", key));
    }
    const absl::string_view value =
        eq == absl::string_view::npos
            ? absl::string_view()
            : absl::StripAsciiWhitespace(piece.substr(eq + 1));
    if (value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": missing value (expected ", key, "=value)"));
    }
    if (!raw.emplace(key, value).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: given twice (\"%s\" and \"%s\")", key,
                          raw.find(key)->second, value));
    }
  }
  return raw;
}

absl::StatusOr<absl::string_view> Required(const RawDirectives& raw,
                                           absl::string_view name) {
  const auto it = raw.find(name);
  if (it == raw.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing required directive ", name));
  }
  return it->second;
}

// The five directives every message table has.
absl::Status ParseRequired(const RawDirectives& raw, TableSettings& settings) {
  ASSIGN_OR_RETURN(const absl::string_view ack_wait, Required(raw, kAckWait));
  ASSIGN_OR_RETURN(settings.ack_wait, ParseSeconds(kAckWait, ack_wait));
  ASSIGN_OR_RETURN(const absl::string_view purge_after,
                   Required(raw, kPurgeAfter));
  ASSIGN_OR_RETURN(settings.purge_after,
                   ParseSeconds(kPurgeAfter, purge_after));
  ASSIGN_OR_RETURN(const absl::string_view batch_size,
                   Required(raw, kBatchSize));
  ASSIGN_OR_RETURN(settings.batch_size,
                   ParseCount(kBatchSize, batch_size, kMaxBatchSize));
  ASSIGN_OR_RETURN(const absl::string_view cache_size,
                   Required(raw, kCacheSize));
  ASSIGN_OR_RETURN(settings.cache_size,
                   ParseCount(kCacheSize, cache_size, kMaxCacheSize));
  ASSIGN_OR_RETURN(const absl::string_view poller_interval,
                   Required(raw, kPollerInterval));
  ASSIGN_OR_RETURN(settings.poller_interval,
                   ParseSeconds(kPollerInterval, poller_interval));
  return absl::OkStatus();
}

// vt_min_backoff and vt_max_backoff (after ParseRequired: min defaults to
// the ack wait).
absl::Status ParseBackoff(const RawDirectives& raw, TableSettings& settings) {
  // The error below quotes the values as written, so remember where min came
  // from when it is the default.
  std::string min_backoff_text =
      absl::StrCat(raw.find(kAckWait)->second, " s, from ", kAckWait);
  settings.min_backoff = settings.ack_wait;
  if (const auto it = raw.find(kMinBackoff); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.min_backoff,
                     ParseSeconds(kMinBackoff, it->second));
    min_backoff_text = absl::StrCat(it->second, " s");
  }
  if (const auto it = raw.find(kMaxBackoff); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.max_backoff,
                     ParseSeconds(kMaxBackoff, it->second));
    if (settings.max_backoff < settings.min_backoff) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s (%s s) is less than %s (%s)", kMaxBackoff,
                          it->second, kMinBackoff, min_backoff_text));
    }
  }
  return absl::OkStatus();
}

// The streamed columns and what makes a message dead.
absl::Status ParseColumnsAndFailures(const RawDirectives& raw,
                                     TableSettings& settings) {
  if (const auto it = raw.find(kMessageCols); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.message_cols, ParseMessageCols(it->second));
  }
  if (const auto it = raw.find(kMaxAttempts); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.max_attempts,
                     ParseCount(kMaxAttempts, it->second, kMaxAttemptsLimit));
  }
  if (const auto it = raw.find(kMaxAge); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.max_age, ParseSeconds(kMaxAge, it->second));
  }
  if (const auto it = raw.find(kDeadRetention); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.dead_retention,
                     ParseSeconds(kDeadRetention, it->second));
  }
  if (const auto it = raw.find(kDedupWindow); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.dedup_window,
                     ParseSeconds(kDedupWindow, it->second));
  }
  return absl::OkStatus();
}

// msgq_rate_limit and msgq_rate_burst.
absl::Status ParseRateLimit(const RawDirectives& raw, TableSettings& settings) {
  if (const auto it = raw.find(kRateLimit); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.rate_limit,
                     ParseRate(kRateLimit, it->second, kMaxRate));
    // Default burst: one second's worth, at least one message.
    settings.rate_burst = std::max(1.0, std::ceil(settings.rate_limit));
  }
  if (const auto it = raw.find(kRateBurst); it != raw.end()) {
    if (settings.rate_limit == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(kRateBurst, " needs ", kRateLimit,
                       " (the rate the burst refills at)"));
    }
    ASSIGN_OR_RETURN(settings.rate_burst,
                     ParseRate(kRateBurst, it->second, kMaxRate));
    if (settings.rate_burst < 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: \"%s\" must be at least 1 message", kRateBurst, it->second));
    }
  }
  return absl::OkStatus();
}

// Used only by tables RANGE-partitioned on time_created; bounds lie on a
// grid of whole seconds (partition names are the bound's UTC second).
absl::Status ParsePartitions(const RawDirectives& raw,
                             TableSettings& settings) {
  if (const auto it = raw.find(kPartitionInterval); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.partition_interval,
                     ParseSeconds(kPartitionInterval, it->second));
    if (settings.partition_interval !=
            absl::Seconds(absl::ToInt64Seconds(settings.partition_interval)) ||
        settings.partition_interval < absl::Seconds(1)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: \"%s\" must be a whole number of seconds",
                          kPartitionInterval, it->second));
    }
  }
  if (const auto it = raw.find(kPartitionsAhead); it != raw.end()) {
    ASSIGN_OR_RETURN(
        settings.partitions_ahead,
        ParseCount(kPartitionsAhead, it->second, kMaxPartitionsAhead));
  }
  return absl::OkStatus();
}

// msgq_concurrency_by and msgq_concurrency (after the order and fair keys,
// which they are checked against).
absl::Status ParseConcurrency(const RawDirectives& raw,
                              TableSettings& settings) {
  const auto by = raw.find(kConcurrencyBy);
  const auto n = raw.find(kConcurrency);
  if (by == raw.end() && n == raw.end()) return absl::OkStatus();
  if (by == raw.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kConcurrency, " needs ", kConcurrencyBy, " (the column it limits by)"));
  }
  if (n == raw.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kConcurrencyBy, " needs ", kConcurrency,
                     " (the most messages of one key in flight at once)"));
  }
  ASSIGN_OR_RETURN(settings.concurrency_by,
                   ParseColumnName(kConcurrencyBy, by->second));
  ASSIGN_OR_RETURN(settings.concurrency,
                   ParseCount(kConcurrency, n->second, kMaxConcurrency));
  if (!settings.order_by.empty()) {
    return absl::InvalidArgumentError(
        absl::EqualsIgnoreCase(settings.order_by, settings.concurrency_by)
            ? absl::StrCat(kConcurrencyBy, " and ", kOrderBy,
                           " cannot name the same column (an ordered key "
                           "sends one message at a time already)")
            : absl::StrCat(kConcurrencyBy, " and ", kOrderBy,
                           " cannot be combined (an ordered table reads "
                           "only its keys' heads)"));
  }
  if (!settings.fair_by.empty() &&
      !absl::EqualsIgnoreCase(settings.fair_by, settings.concurrency_by)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s (%s) and %s (%s) must name the same column (the poll reads "
        "per value of one column)",
        kConcurrencyBy, settings.concurrency_by, kFairBy, settings.fair_by));
  }
  return absl::OkStatus();
}

// The keys of flow control: msgq_order_by, msgq_fair_by, msgq_concurrency*.
// Column names only; the table's loader checks that the columns exist.
absl::Status ParseKeys(const RawDirectives& raw, TableSettings& settings) {
  if (const auto it = raw.find(kOrderBy); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.order_by, ParseColumnName(kOrderBy, it->second));
  }
  if (const auto it = raw.find(kFairBy); it != raw.end()) {
    ASSIGN_OR_RETURN(settings.fair_by, ParseColumnName(kFairBy, it->second));
    if (!settings.order_by.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kFairBy, " and ", kOrderBy,
          " cannot be combined (an ordered key sends one message at a time "
          "already)"));
    }
  }
  return ParseConcurrency(raw, settings);
}

}  // namespace

bool IsMessageTableComment(absl::string_view comment) {
  return absl::StrContains(comment, kMarker);
}

absl::StatusOr<TableSettings> ParseDirectives(absl::string_view comment) {
  ASSIGN_OR_RETURN(const RawDirectives raw, SplitDirectives(comment));
  TableSettings settings;
  RETURN_IF_ERROR(ParseRequired(raw, settings));
  RETURN_IF_ERROR(ParseBackoff(raw, settings));
  RETURN_IF_ERROR(ParseColumnsAndFailures(raw, settings));
  RETURN_IF_ERROR(ParseRateLimit(raw, settings));
  RETURN_IF_ERROR(ParsePartitions(raw, settings));
  RETURN_IF_ERROR(ParseKeys(raw, settings));
  return settings;
}

}  // namespace msgq
