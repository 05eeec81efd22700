#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"

namespace msgq {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<LogLevel> g_min_level{LogLevel::kInfo};

LogLevel LevelOf(absl::string_view severity) {
  if (severity == "E") return LogLevel::kError;
  if (severity == "W") return LogLevel::kWarning;
  return LogLevel::kInfo;
}

const char* LevelName(absl::string_view severity) {
  switch (LevelOf(severity)) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      break;
  }
  return "info";
}

class AsyncWriter {
 public:
  // Leaked on purpose: threads may log during static destruction.
  static AsyncWriter& Get() {
    static AsyncWriter* const writer = new AsyncWriter();
    return *writer;
  }

  void Push(std::string line) {
    absl::MutexLock lock(&mu_);
    if (queue_.size() >= kMaxQueuedLogLines) {
      ++dropped_;
      ++dropped_unreported_;
      return;
    }
    queue_.push_back(std::move(line));
  }

  bool Flush(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queue_.empty() && !writing_;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  }

  int64_t dropped() {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }

 private:
  AsyncWriter() {
    std::thread([this] { Run(); }).detach();
  }

  void Run() {
    while (true) {
      std::deque<std::string> lines;
      int64_t lost = 0;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !queue_.empty();
        };
        mu_.Await(absl::Condition(&ready));
        lines.swap(queue_);
        lost = dropped_unreported_;
        dropped_unreported_ = 0;
        writing_ = true;
      }
      if (lost > 0) {
        WriteAll(FormatLogLine(
            g_format.load(), "W", absl::Now(),
            absl::StrCat("log: ", lost,
                         " line(s) dropped: stderr was not being read")));
      }
      for (const std::string& line : lines) WriteAll(line);
      absl::MutexLock lock(&mu_);
      writing_ = false;
    }
  }

  static void WriteAll(absl::string_view data) {
    while (!data.empty()) {
      const ssize_t n = write(STDERR_FILENO, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return;  // nowhere to report it
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_unreported_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::StatusOr<LogOptions> ParseLogOptions(absl::string_view format,
                                           absl::string_view level) {
  LogOptions options;
  if (format == "json") {
    options.format = LogFormat::kJson;
  } else if (format != "text") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_format must be 'text' or 'json', not '", format, "'"));
  }
  if (level == "warning") {
    options.min_level = LogLevel::kWarning;
  } else if (level == "error") {
    options.min_level = LogLevel::kError;
  } else if (level != "info") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_level must be 'info', 'warning' or 'error', not '", level, "'"));
  }
  return options;
}

void SetLogOptions(LogOptions options) {
  g_format.store(options.format);
  g_min_level.store(options.min_level);
}

std::string FormatLogLine(LogFormat format, absl::string_view severity,
                          absl::Time time, absl::string_view message,
                          const std::optional<LogTable>& table) {
  if (format == LogFormat::kText) {
    return absl::StrCat(
        severity,
        absl::FormatTime("%Y-%m-%d %H:%M:%E3S", time, absl::UTCTimeZone()), " ",
        message, "\n");
  }
  nlohmann::ordered_json line = {
      {"time",
       absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone())},
      {"level", LevelName(severity)}};
  if (table.has_value()) {
    line["keyspace"] = std::string(table->keyspace);
    line["table"] = std::string(table->table);
  }
  line["msg"] = std::string(message);
  // Invalid UTF-8 (e.g. echoed client input) becomes U+FFFD.
  return line.dump(-1, ' ', false,
                   nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

void LogLine(absl::string_view severity, absl::string_view message) {
  if (LevelOf(severity) < g_min_level.load()) return;
  AsyncWriter::Get().Push(
      FormatLogLine(g_format.load(), severity, absl::Now(), message));
}

std::optional<std::string> LogRepeatLimiter::Admit(const std::string& key,
                                                   absl::string_view message) {
  const absl::Time now = clock_->MonotonicNow();
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= options_.max_keys) {
      std::erase_if(entries_, [&](const auto& e) {
        return now - e.second.last_written >= options_.window;
      });
      if (entries_.size() >= options_.max_keys) return std::string(message);
    }
    entries_.emplace(key, Entry{now, 0});
    return std::string(message);
  }
  Entry& entry = it->second;
  if (now - entry.last_written < options_.window) {
    ++entry.held_back;
    return std::nullopt;
  }
  const int64_t repeats = entry.held_back + 1;
  const bool held = entry.held_back > 0;
  entry = Entry{now, 0};
  if (!held) return std::string(message);
  return absl::StrCat(message, " (repeated ", repeats, " times)");
}

void LogTableLine(absl::string_view severity, absl::string_view keyspace,
                  absl::string_view table, absl::string_view message) {
  if (LevelOf(severity) < g_min_level.load()) return;
  std::string text(message);
  if (LevelOf(severity) > LogLevel::kInfo) {
    // Leaked on purpose: threads may log during static destruction.
    static LogRepeatLimiter* const limiter =
        new LogRepeatLimiter(RealClock::Get());
    std::optional<std::string> admitted =
        limiter->Admit(absl::StrCat(keyspace, "\x1f", table, "\x1f", severity,
                                    "\x1f", message),
                       message);
    if (!admitted.has_value()) return;
    text = *std::move(admitted);
  }
  AsyncWriter::Get().Push(FormatLogLine(g_format.load(), severity, absl::Now(),
                                        text, LogTable{keyspace, table}));
}

bool FlushLogs(absl::Duration timeout) {
  return AsyncWriter::Get().Flush(timeout);
}

int64_t DroppedLogLines() { return AsyncWriter::Get().dropped(); }

}  // namespace msgq
