// BinlogWatcher's public face and its thread: start, stop, status, and what
// to do after a stream ended (binlog_watcher.h). One dump's event loop is in
// binlog_watcher_dump.cc, GTID positions in binlog_watcher_position.cc.
#include "engine/binlog/binlog_watcher.h"

#include <sys/socket.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_join.h"
#include "common/log.h"

namespace msgq {

BinlogWatcher::BinlogWatcher(Options options, Listener* listener)
    : options_(std::move(options)), listener_(listener) {}

BinlogWatcher::~BinlogWatcher() { Stop(); }

BinlogWatcher::Status BinlogWatcher::status() const {
  absl::MutexLock lock(&mu_);
  Status s = status_;
  s.server_id = options_.server_id;
  s.lag_seconds = LagSeconds(s, caught_up_, absl::Now());
  return s;
}

double BinlogWatcher::LagSeconds(const Status& status, bool caught_up,
                                 absl::Time now) {
  if (!status.streaming || caught_up ||
      status.last_event_time == absl::InfinitePast()) {
    return 0;
  }
  return std::max(0.0, absl::ToDoubleSeconds(now - status.last_event_time));
}

void BinlogWatcher::SetStreaming(bool streaming) {
  absl::MutexLock lock(&mu_);
  status_.streaming = streaming;
  caught_up_ = true;
  if (streaming) status_.position = ConnectState();
}

void BinlogWatcher::Start() {
  if (!options_.start_gtid.empty()) ResumeFrom(options_.start_gtid);
  thread_ = std::thread([this] { Run(); });
}

void BinlogWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // Unblocks a fetch waiting for the next event.
    if (socket_ >= 0) shutdown(socket_, SHUT_RDWR);
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

bool BinlogWatcher::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

std::string BinlogWatcher::ConnectState() const {
  std::vector<std::string> parts;
  for (const auto& [domain, gtid] : resume_) parts.push_back(gtid);
  return absl::StrJoin(parts, ",");
}

void BinlogWatcher::Run() {
  Backoff backoff(BackoffOptions{.initial = options_.retry_min,
                                 .multiplier = 2,
                                 .max = options_.retry_max,
                                 .jitter = 0.2},
                  options_.jitter_seed != 0 ? options_.jitter_seed
                                            : std::random_device{}());
  std::string last_problem;
  bool just_reset = false;  // reset the position, no stream started since
  while (!Stopping()) {
    stream_started_ = false;
    absl::Status status = StreamOnce();
    if (Stopping()) return;
    SetStreaming(false);
    listener_->OnStreaming(false, std::string(status.message()));
    if (stream_started_) {
      backoff.Reset();
      just_reset = false;
    }
    const Retry retry = PlanRetry(status, last_problem, &backoff, &just_reset);
    last_problem = std::string(status.message());
    absl::MutexLock lock(&mu_);
    status_.last_error = last_problem;
    if (retry.position_reset) ++status_.position_resets;
    if (status.code() == absl::StatusCode::kAlreadyExists) ++status_.evictions;
    if (!stopping_) wake_.WaitFor(&mu_, retry.wait);
  }
}

BinlogWatcher::Retry BinlogWatcher::PlanRetry(const absl::Status& status,
                                              const std::string& last_problem,
                                              Backoff* backoff,
                                              bool* just_reset) {
  const bool new_problem = last_problem != status.message();
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      if (new_problem) {
        LogWarning(
            "binlog: cannot follow the binary log, falling back to "
            "polling (vt_poller_interval): ",
            status.message());
      }
      backoff->Reset();
      return Retry{.wait = options_.recheck_interval};
    case absl::StatusCode::kOutOfRange:
      if (resume_.empty() || *just_reset) {
        // Already at the server's own position: resetting again at once
        // would spin.
        if (new_problem) {
          LogWarning("binlog: stream interrupted, reconnecting with backoff: ",
                     status.message());
        }
        return Retry{.wait = backoff->Next()};
      }
      // The resume position is gone: start over at once from the server's
      // current position; the restart polls.
      LogWarning("binlog: resume position is gone (", status.message(),
                 "); following from the server's current position and "
                 "polling once to cover the gap");
      resume_.clear();
      *just_reset = true;
      return Retry{.wait = absl::ZeroDuration(), .position_reset = true};
    case absl::StatusCode::kResourceExhausted:
      // The dump ended itself to give back a huge event's buffer.
      LogInfo("binlog: reconnecting to free memory: ", status.message());
      return Retry{.wait = absl::ZeroDuration()};
    case absl::StatusCode::kAlreadyExists:
      if (evictions_logged_++ == 0) {
        LogWarning(
            "binlog: dump evicted by another replica with the same server "
            "id ",
            options_.server_id,
            " (another msgqd or a real replica); give each msgqd its own "
            "--binlog_server_id: ",
            status.message());
      }
      return Retry{.wait = backoff->Next()};
    default:
      if (new_problem) {
        LogWarning("binlog: stream interrupted, reconnecting with backoff: ",
                   status.message());
      }
      return Retry{.wait = backoff->Next()};
  }
}

}  // namespace msgq
