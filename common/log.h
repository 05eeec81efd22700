// Logging to stderr (Abseil 20220623 has no absl/log):
//   LogInfo("table ", name, " loaded");
//
// A call formats its line and hands it to a bounded in-memory queue that one
// background thread writes to stderr, so logging never blocks the caller,
// even when stderr is a stalled pipe: callers may log while holding a lock
// (still best avoided). When the queue is full the line is dropped and
// counted, and the next line written says how many were lost.
// FlushLogs() waits, up to a bound, until every queued line was written;
// call it before the process exits.
//
// Lines are text ("I2026-01-02 03:04:05.678 message") or, after
// SetLogOptions({.format = LogFormat::kJson}), one JSON object per line:
//   {"time":"2026-01-02T03:04:05.678Z","level":"info","msg":"message"}
// Lines below the minimum level are not formatted at all.
//
// Lines about one table go through LogTableInfo/Warning/Error(keyspace,
// table, ...). The text line is the message as given (callers already name
// the table in it); the JSON line also carries the table as fields:
//   {"time":"...","level":"error","keyspace":"msgq","table":"jobs","msg":"..."}
// Warnings and errors about a table are rate-limited per (table, severity,
// message) by a LogRepeatLimiter over one minute: the first is written at
// once, identical ones within the minute are only counted, and the first
// after the minute is written with " (repeated N times)". Info lines (state
// changes) are never limited.
//
// Thread-safe.
#ifndef MSGQ_COMMON_LOG_H_
#define MSGQ_COMMON_LOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace msgq {

// Lines queued for the writer; more are dropped. The writer takes the queue
// a batch at a time, so while it writes one batch up to this many more can
// queue: at most twice this many lines are held in all.
inline constexpr size_t kMaxQueuedLogLines = 10000;

enum class LogFormat { kText, kJson };
enum class LogLevel { kInfo = 0, kWarning = 1, kError = 2 };
struct LogOptions {
  LogFormat format = LogFormat::kText;
  LogLevel min_level = LogLevel::kInfo;
};

// From --log_format (text|json) and --log_level (info|warning|error);
// INVALID_ARGUMENT naming the bad value otherwise.
absl::StatusOr<LogOptions> ParseLogOptions(absl::string_view format,
                                           absl::string_view level);
// Applies to lines logged from now on (thread-safe; meant for startup).
void SetLogOptions(LogOptions options);

// The table a line is about, for the JSON fields "keyspace" and "table".
struct LogTable {
  absl::string_view keyspace;
  absl::string_view table;
};

// One line as written (with its newline); `severity` is "I", "W" or "E".
// With `table`, a JSON line has "keyspace" and "table" before "msg"; a text
// line is the same either way.
std::string FormatLogLine(LogFormat format, absl::string_view severity,
                          absl::Time time, absl::string_view message,
                          const std::optional<LogTable>& table = std::nullopt);

// Rate-limits repeated identical lines. For each key (the caller's: msgq
// uses keyspace, table, severity and message), Admit() answers the first
// occurrence with the message itself, then nullopt for the occurrences
// within `window` of the last line written (counting them), and for the
// first occurrence after that window the message with " (repeated N
// times)" appended, N counting the occurrences since the last line written,
// this one included (a plain message again when none was held back). Held
// back occurrences that are never followed by another are not reported.
// At most `max_keys` keys are remembered: when full, keys whose last line
// is older than the window are forgotten, and if none is, lines are
// admitted unlimited.
//
// Thread-safe; `clock` (its monotonic reading) must outlive the limiter.
class LogRepeatLimiter {
 public:
  struct Options {
    absl::Duration window = absl::Minutes(1);
    size_t max_keys = 1024;
  };
  explicit LogRepeatLimiter(Clock* clock) : LogRepeatLimiter(clock, {}) {}
  LogRepeatLimiter(Clock* clock, Options options)
      : clock_(clock), options_(options) {}

  std::optional<std::string> Admit(const std::string& key,
                                   absl::string_view message);

 private:
  struct Entry {
    absl::Time last_written;
    int64_t held_back = 0;
  };
  Clock* const clock_;
  const Options options_;
  absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// `severity`: "I", "W" or "E".
void LogLine(absl::string_view severity, absl::string_view message);

// A line about `keyspace`.`table` (see above); warnings and errors go
// through the process-wide LogRepeatLimiter (real clock, one minute).
void LogTableLine(absl::string_view severity, absl::string_view keyspace,
                  absl::string_view table, absl::string_view message);

// Waits until the queue is empty and written, or `timeout` passed. Returns
// true when everything was written.
bool FlushLogs(absl::Duration timeout = absl::Seconds(2));

// Lines dropped so far because the queue was full.
int64_t DroppedLogLines();

template <typename... Args>
void LogInfo(const Args&... args) {
  LogLine("I", absl::StrCat(args...));
}
template <typename... Args>
void LogWarning(const Args&... args) {
  LogLine("W", absl::StrCat(args...));
}
template <typename... Args>
void LogError(const Args&... args) {
  LogLine("E", absl::StrCat(args...));
}

template <typename... Args>
void LogTableInfo(absl::string_view keyspace, absl::string_view table,
                  const Args&... args) {
  LogTableLine("I", keyspace, table, absl::StrCat(args...));
}
template <typename... Args>
void LogTableWarning(absl::string_view keyspace, absl::string_view table,
                     const Args&... args) {
  LogTableLine("W", keyspace, table, absl::StrCat(args...));
}
template <typename... Args>
void LogTableError(absl::string_view keyspace, absl::string_view table,
                   const Args&... args) {
  LogTableLine("E", keyspace, table, absl::StrCat(args...));
}

}  // namespace msgq

#endif  // MSGQ_COMMON_LOG_H_
