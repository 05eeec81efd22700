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
// Thread-safe.
#ifndef MSGQ_ENGINE_LOG_H_
#define MSGQ_ENGINE_LOG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace msgq {

// Lines held for the writer; more are dropped.
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

// One line as written (with its newline); `severity` is "I", "W" or "E".
std::string FormatLogLine(LogFormat format, absl::string_view severity,
                          absl::Time time, absl::string_view message);

// `severity`: "I", "W" or "E".
void LogLine(absl::string_view severity, absl::string_view message);

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

}  // namespace msgq

#endif  // MSGQ_ENGINE_LOG_H_
