#include "client/internal/heartbeat.h"

#include <algorithm>
#include <utility>

namespace msgq {

std::optional<absl::Duration> AckWaitOf(
    const std::vector<v1::TableStatus>& tables, const TableRef& table) {
  for (const v1::TableStatus& t : tables) {
    if (!t.loaded() || t.name() != table.name) continue;
    if (!table.keyspace.empty() && t.keyspace() != table.keyspace) continue;
    if (t.settings().ack_wait() <= 0) return std::nullopt;
    return absl::Seconds(t.settings().ack_wait());
  }
  return std::nullopt;
}

Heartbeat::Heartbeat(const HeartbeatOptions& options, ExtendFn extend,
                     ErrorFn on_error, Clock clock)
    : fraction_(std::clamp(options.fraction, 0.05, 1.0)),
      max_extension_(options.max_extension),
      enabled_(options.max_extension > absl::ZeroDuration()),
      extend_(std::move(extend)),
      on_error_(std::move(on_error)),
      clock_(std::move(clock)) {
  if (options.ack_wait > absl::ZeroDuration()) SetAckWait(options.ack_wait);
}

Heartbeat::~Heartbeat() { Close(); }

void Heartbeat::SetAckWait(std::optional<absl::Duration> ack_wait) {
  absl::MutexLock lock(&mu_);
  ack_wait_ = ack_wait.value_or(absl::ZeroDuration());
  ++changes_;
}

void Heartbeat::Start() {
  absl::MutexLock lock(&join_mu_);
  if (!enabled_ || thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void Heartbeat::Close() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

Heartbeat::Ticket Heartbeat::Begin(Delivery delivery, absl::Time received) {
  absl::MutexLock lock(&mu_);
  if (!enabled_) return 0;
  const Ticket ticket = next_ticket_++;
  entries_.emplace(ticket, Entry{std::move(delivery), received, received});
  ++changes_;
  return ticket;
}

void Heartbeat::End(Ticket ticket) {
  absl::MutexLock lock(&mu_);
  entries_.erase(ticket);
}

absl::Duration Heartbeat::Interval() const { return ack_wait_ * fraction_; }

absl::Time Heartbeat::NextDueLocked() const {
  mu_.AssertHeld();
  absl::Time next = absl::InfiniteFuture();
  if (ack_wait_ <= absl::ZeroDuration()) return next;
  for (const auto& [ticket, entry] : entries_) {
    if (entry.in_flight || entry.exhausted) continue;
    const absl::Time due = entry.last_try + Interval();
    // Past the cap nothing is asked for: the entry just waits for End().
    if (due >= entry.received + ack_wait_ + max_extension_) continue;
    next = std::min(next, due);
  }
  return next;
}

absl::Time Heartbeat::NextDue() const {
  absl::MutexLock lock(&mu_);
  return NextDueLocked();
}

void Heartbeat::Tick() {
  const absl::Time now = clock_();
  std::vector<Due> due;
  {
    absl::MutexLock lock(&mu_);
    if (ack_wait_ <= absl::ZeroDuration()) return;
    for (auto& [ticket, entry] : entries_) {
      if (entry.in_flight || entry.exhausted ||
          now < entry.last_try + Interval()) {
        continue;
      }
      const absl::Duration left =
          entry.received + ack_wait_ + max_extension_ - now;
      if (left <= absl::ZeroDuration()) {
        entry.exhausted = true;
        continue;
      }
      entry.in_flight = true;
      due.push_back({ticket, entry.delivery, std::min(ack_wait_, left)});
    }
  }
  for (const Due& d : due) {
    absl::StatusOr<int64_t> extended = extend_(d.delivery, d.duration);
    if (!extended.ok() && on_error_) on_error_(extended.status());
    absl::MutexLock lock(&mu_);
    if (!extended.ok()) {
      ++stats_.errors;
    } else if (*extended == 0) {
      ++stats_.lost;
    } else {
      ++stats_.extended;
    }
    auto it = entries_.find(d.ticket);
    if (it == entries_.end()) continue;  // ended meanwhile
    if (extended.ok() && *extended == 0) {
      entries_.erase(it);  // lost: never extend it again
      continue;
    }
    it->second.in_flight = false;
    it->second.last_try = now;
  }
}

Heartbeat::Stats Heartbeat::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void Heartbeat::Run() {
  absl::MutexLock lock(&mu_);
  while (!closing_) {
    const int64_t seen = changes_;
    auto woken = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closing_ || changes_ != seen;
    };
    if (mu_.AwaitWithDeadline(absl::Condition(&woken), NextDueLocked())) {
      continue;  // closing, or the schedule changed: look again
    }
    mu_.Unlock();
    Tick();
    mu_.Lock();
  }
}

}  // namespace msgq
