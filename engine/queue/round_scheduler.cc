#include "engine/queue/round_scheduler.h"

#include <algorithm>

namespace msgq {

RoundScheduler::RoundScheduler(Options options, absl::Time mono_now)
    : options_(options),
      next_poll_at_(mono_now + options.poll_interval),
      next_purge_at_(mono_now),  // purge once at start, then every interval
      retry_backoff_(BackoffOptions{.initial = options.retry_min,
                                    .multiplier = 2.0,
                                    .max = options.retry_max,
                                    .jitter = options.retry_jitter},
                     options.seed) {}

void RoundScheduler::NoteDueAt(int64_t time_next_ns, absl::Time mono) {
  if (!next_due_ns_.has_value() || time_next_ns < *next_due_ns_) {
    next_due_ns_ = time_next_ns;
    due_known_at_ = mono;
  } else if (time_next_ns == *next_due_ns_) {
    // Noted again (a poll found it not due yet): a reading must be newer.
    due_known_at_ = std::max(due_known_at_, mono);
  }
}

bool RoundScheduler::NeedsReading(const View& view, int64_t wall_ns) const {
  return MayPoll(view) && next_due_ns_.has_value() &&
         wall_ns >= *next_due_ns_ && !DueConfirmed(view);
}

void RoundScheduler::NoteBacklog() {
  more_due_ = true;
  ++backlog_generation_;
}

void RoundScheduler::CacheLevel(size_t queued, size_t capacity) {
  if (more_due_ && queued <= capacity / 2) poll_requested_ = true;
}

bool RoundScheduler::NameForFetch(const std::string& id) {
  if (fetch_ids_.contains(id)) return true;
  if (fetch_ids_.size() >= options_.max_fetch_ids) {
    NoteBacklog();  // the poll at drain picks it up
    return false;
  }
  fetch_ids_.insert(id);
  refetch_.erase(id);
  return true;
}

void RoundScheduler::ForgetFetch(const std::string& id) {
  fetch_ids_.erase(id);
  refetch_.erase(id);
}

bool RoundScheduler::PollDue(const View& view, absl::Time mono,
                             int64_t wall_ns) const {
  if (!MayPoll(view)) return false;
  if (poll_requested_ || mono >= next_poll_at_) return true;
  return next_due_ns_.has_value() && wall_ns >= *next_due_ns_ &&
         DueConfirmed(view);
}

bool RoundScheduler::FetchDue(const View& view, absl::Time mono) const {
  if (!view.owner || !view.subscribers || view.cache_full) return false;
  return !fetch_ids_.empty() || (!refetch_.empty() && mono >= refetch_at_);
}

bool RoundScheduler::HaveWork(const View& view, absl::Time mono,
                              int64_t wall_ns) const {
  if (Waiting(mono)) return false;
  if (view.writes_pending || mono >= pump_at_ ||
      mono >= view.postpones_due_at || mono >= view.locked_retry_at) {
    return true;
  }
  return FetchDue(view, mono) || PurgeDue(view, mono) ||
         PollDue(view, mono, wall_ns);
}

absl::Time RoundScheduler::NextDeadline(const View& view, absl::Time mono,
                                        int64_t wall_ns) const {
  if (Waiting(mono)) return retry_at_;
  absl::Time deadline =
      std::min({pump_at_, view.postpones_due_at, view.locked_retry_at});
  if (!view.owner) return deadline;
  deadline = std::min(deadline, next_purge_at_);
  if (view.subscribers && !view.cache_full) {
    deadline = std::min(deadline, next_poll_at_);
    // A due time reached but not confirmed: the reading wakes the caller.
    if (next_due_ns_.has_value() &&
        (*next_due_ns_ > wall_ns || DueConfirmed(view))) {
      deadline =
          std::min(deadline, mono + absl::Nanoseconds(*next_due_ns_ - wall_ns));
    }
    if (!refetch_.empty()) deadline = std::min(deadline, refetch_at_);
  }
  return deadline;
}

RoundScheduler::Round RoundScheduler::Take(const View& view, absl::Time mono,
                                           int64_t wall_ns) {
  Round round;
  if (Waiting(mono)) return round;
  if (mono >= pump_at_) {
    round.pump = true;
    pump_at_ = absl::InfiniteFuture();
  }
  if (PollDue(view, mono, wall_ns)) {
    round.poll = true;
    round.backlog_generation = backlog_generation_;
    poll_requested_ = false;
    next_poll_at_ = mono + options_.poll_interval;
    if (next_due_ns_.has_value() && *next_due_ns_ <= wall_ns) {
      next_due_ns_.reset();
    }
  } else if (FetchDue(view, mono)) {
    if (!refetch_.empty() && mono >= refetch_at_) {
      for (const auto& [id, reads] : refetch_) fetch_ids_.insert(id);
      refetch_at_ = absl::InfiniteFuture();
    }
    round.fetch_ids.assign(fetch_ids_.begin(), fetch_ids_.end());
    fetch_ids_.clear();
  }
  if (PurgeDue(view, mono)) {
    round.purge = true;
    purge_more_ = false;
    next_purge_at_ = mono + options_.poll_interval;
  }
  return round;
}

void RoundScheduler::PollDone(const Round& round, bool hit_limit,
                              const absl::flat_hash_set<std::string>& found) {
  more_due_ = hit_limit || backlog_generation_ != round.backlog_generation;
  // Named rows the poll returned need no fetch; the others (not visible
  // yet, or beyond the poll's limit) are fetched in the next round.
  for (const std::string& id : found) {
    fetch_ids_.erase(id);
    refetch_.erase(id);
  }
}

void RoundScheduler::FetchDone(const std::vector<std::string>& asked,
                               const absl::flat_hash_set<std::string>& found,
                               absl::Time mono) {
  for (const std::string& id : asked) {
    if (found.contains(id)) {
      refetch_.erase(id);
      continue;
    }
    if (fetch_ids_.contains(id)) continue;  // named again meanwhile
    // Not visible yet (the binlog can run ahead of a commit's visibility),
    // or acked/rescheduled meanwhile: read again soon, a few times, then
    // leave it to one poll.
    const int reads = ++refetch_[id];
    if (reads > options_.max_refetches) {
      refetch_.erase(id);
      poll_requested_ = true;
      continue;
    }
    refetch_at_ = std::min(refetch_at_,
                           mono + options_.refetch_delay * (1 << (reads - 1)));
  }
}

bool RoundScheduler::MysqlFailed(absl::Time mono) {
  const bool was_ok = mysql_ok_;
  if (was_ok) retry_backoff_.Reset();
  mysql_ok_ = false;
  retry_at_ = mono + retry_backoff_.Next();
  poll_requested_ = true;  // cover anything missed while away
  return was_ok;
}

bool RoundScheduler::MysqlOk() {
  const bool was_down = !mysql_ok_;
  mysql_ok_ = true;
  retry_backoff_.Reset();
  return was_down;
}

}  // namespace msgq
