#include "engine/log.h"

#include <unistd.h>

#include <cerrno>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace msgq {
namespace {

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
        WriteAll(absl::StrCat("W", Stamp(), " log: ", lost,
                              " line(s) dropped: stderr was not being read\n"));
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

 public:
  static std::string Stamp() {
    return absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                            absl::UTCTimeZone());
  }

 private:
  absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_unreported_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

void LogLine(absl::string_view severity, absl::string_view message) {
  AsyncWriter::Get().Push(
      absl::StrCat(severity, AsyncWriter::Stamp(), " ", message, "\n"));
}

bool FlushLogs(absl::Duration timeout) {
  return AsyncWriter::Get().Flush(timeout);
}

int64_t DroppedLogLines() { return AsyncWriter::Get().dropped(); }

}  // namespace msgq
