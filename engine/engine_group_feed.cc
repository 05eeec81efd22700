#include "engine/engine_group_feed.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/log.h"
#include "engine/directives.h"

namespace msgq {
namespace {

// The message of an insert's image, seen when its rows event was written
// (the group's lag in seconds counts from it).
Message Seen(const RowChange& c) {
  Message m = MessageOf(c);
  m.seen_at = c.event_time * kSecond;
  return m;
}

}  // namespace

GroupFeed::GroupFeed(GroupRow row, Options options, Clock* clock,
                     JitterSource* jitter)
    : row_(std::move(row)),
      options_(std::move(options)),
      batch_size_(
          static_cast<size_t>(std::max(options_.settings.batch_size, 1))),
      max_batches_(std::max(options_.max_batches_per_subscriber, 1)),
      clock_(clock),
      jitter_(jitter),
      policy_(options_.settings, SIZE_MAX, 0),
      ledger_(ParseGtidList(row_.floor_gtid).value_or(GtidList{})),
      written_floor_(FormatGtidList(ledger_.floor())) {}

void GroupFeed::OnRowChanges(const std::vector<RowChange>& changes) {
  std::vector<Send> sends;
  bool first_without_image = false;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    bool offered = false;
    for (const RowChange& c : changes) {
      absl::StatusOr<Gtid> gtid = ParseGtid(c.gtid);
      if (!gtid.ok()) continue;  // not placed: MariaDB names every one
      const bool message =
          c.inserted && !c.deleted && !c.time_acked.has_value();
      if (!message) {
        ledger_.See(*gtid);
        continue;
      }
      if (c.row == nullptr) {
        ledger_.See(*gtid);
        first_without_image |= stats_.no_image++ == 0;
        continue;
      }
      if (options_.filter.has_value() &&
          !options_.filter->Matches(c.row->lengths, c.row->values)) {
        ledger_.See(*gtid);
        ++stats_.filtered;
        continue;
      }
      if (!ledger_.Offer(*gtid, c.id)) {
        // A loaded exception read again: its payload needs no read by id.
        if (ledger_.Sends(c.id).has_value() && !payloads_.contains(c.id)) {
          payloads_.emplace(c.id, Seen(c));
          fetch_.erase(c.id);
          offered = true;
        }
        continue;
      }
      payloads_.insert_or_assign(c.id, Seen(c));
      ++stats_.offered;
      offered = true;
    }
    if (offered) {
      ReleaseDueLocked(clock_->NowNanos());
      sends = PumpLocked();
    }
  }
  if (first_without_image) {
    LogTableWarning(row_.keyspace, row_.table, "group \"", row_.name, "\" of `",
                    row_.keyspace, "`.`", row_.table,
                    "`: an insert came without its row image (a transaction "
                    "over the binlog watcher's bounds) and is not delivered "
                    "to the group; reading rows by id is not built yet");
  }
  Deliver(std::move(sends));
}

absl::Status GroupFeed::Subscribe(std::shared_ptr<Subscriber> subscriber,
                                  int max_unacked) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::FailedPreconditionError(
          absl::StrCat("group \"", row_.name, "\" of `", row_.keyspace, "`.`",
                       row_.table, "` is closed"));
    }
    Sub sub;
    sub.subscriber = std::move(subscriber);
    sub.id = next_id_++;
    sub.max_unacked = max_unacked;
    subs_.push_back(std::move(sub));
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
  return absl::OkStatus();
}

GroupFeed::Sub* GroupFeed::FindLocked(const Subscriber* subscriber) {
  mu_.AssertHeld();
  for (Sub& s : subs_) {
    if (s.subscriber.get() == subscriber) return &s;
  }
  return nullptr;
}

void GroupFeed::Unsubscribe(const Subscriber* subscriber) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(subs_.begin(), subs_.end(), [&](const Sub& s) {
      return s.subscriber.get() == subscriber;
    });
    if (it == subs_.end()) return;
    ledger_.ReturnAll(it->id);
    subs_.erase(it);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void GroupFeed::OnSendDone(const Subscriber* subscriber) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    Sub* sub = FindLocked(subscriber);
    if (sub == nullptr) return;
    --sub->outstanding;
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void GroupFeed::OnSendFailed(const Subscriber* subscriber, MessageBatch batch) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    Sub* sub = FindLocked(subscriber);
    // A subscriber that left gave everything back already.
    if (sub == nullptr) return;
    std::vector<std::string> ids;
    ids.reserve(batch.size());
    for (const Message& m : batch) ids.push_back(m.id);
    ledger_.Return(sub->id, ids);
    --sub->outstanding;
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

int64_t GroupFeed::SettleLocked(const std::vector<std::string>& ids,
                                bool* deletes) {
  mu_.AssertHeld();
  std::vector<std::string> exceptions;
  const int64_t settled = ledger_.Ack(ids, &exceptions);
  if (settled > 0) {
    // The payloads are kept for exactly the ledger's pending messages.
    for (const std::string& id : ids) {
      if (!ledger_.contains(id)) {
        payloads_.erase(id);
        fetch_.erase(id);
      }
    }
  }
  if (deletes != nullptr) *deletes = !exceptions.empty();
  for (std::string& id : exceptions) unwritten_[std::move(id)] = std::nullopt;
  return settled;
}

bool GroupFeed::FloorMovedLocked() const {
  mu_.AssertHeld();
  return FormatGtidList(ledger_.floor()) != written_floor_;
}

GroupFeed::AckResult GroupFeed::Ack(const std::vector<std::string>& ids) {
  AckResult result;
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    bool deletes = false;
    result.settled = SettleLocked(ids, &deletes);
    // Streams capped by max_unacked may have room again.
    if (result.settled > 0) sends = PumpLocked();
    stats_.acked += result.settled;
    result.write = deletes || FloorMovedLocked();
  }
  Deliver(std::move(sends));
  return result;
}

std::optional<std::string> GroupFeed::DeathReasonLocked(const std::string& id,
                                                        int64_t sends,
                                                        int64_t now) {
  mu_.AssertHeld();
  Message probe;
  probe.epoch = sends;
  if (auto it = payloads_.find(id); it != payloads_.end()) {
    probe.time_created = it->second.time_created;
  }
  return policy_.DeathReason(probe, now);
}

void GroupFeed::FailLocked(const std::string& id,
                           std::optional<int64_t> time_next, int64_t now,
                           std::string last_error) {
  mu_.AssertHeld();
  const int64_t attempts = ledger_.Sends(id).value_or(0);
  if (!ledger_.Fail(id, time_next)) return;
  GroupExceptionRow row;
  row.id = id;
  row.attempts = attempts;
  row.time_next = time_next;
  if (!time_next.has_value()) {
    row.time_dead = now;
    // A dead message is read again by id if it is redriven.
    payloads_.erase(id);
    fetch_.erase(id);
    ++stats_.died;
  }
  row.last_error = std::move(last_error);
  unwritten_[id] = std::move(row);
}

absl::StatusOr<NackCount> GroupFeed::Nack(
    std::vector<ManagerDelivery> deliveries,
    std::optional<absl::Duration> delay, const std::string& reason, bool dead) {
  if (delay.has_value() && (*delay < absl::ZeroDuration() ||
                            *delay > absl::Seconds(kMaxDurationSeconds))) {
    return absl::InvalidArgumentError(
        absl::StrCat("nack delay must be between 0 and ", kMaxDurationSeconds,
                     " seconds, got ", absl::ToDoubleSeconds(*delay)));
  }
  NackCount count;
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = clock_->NowNanos();
    const double jitter = jitter_->Next();
    for (const ManagerDelivery& d : deliveries) {
      const std::optional<int64_t> sends_so_far = ledger_.Sends(d.id);
      // Only the latest delivery's holder may nack it.
      if (!sends_so_far.has_value() || *sends_so_far != d.epoch + 1) continue;
      std::optional<std::string> why;
      if (!dead) why = DeathReasonLocked(d.id, *sends_so_far, now);
      if (dead || why.has_value()) {
        FailLocked(d.id, std::nullopt, now,
                   reason.empty() ? why.value_or("") : reason);
        ++count.dead;
        continue;
      }
      const int64_t time_next =
          now + (delay.has_value() ? absl::ToInt64Nanoseconds(*delay)
                                   : RedeliveryBackoffNanos(options_.settings,
                                                            d.epoch, jitter));
      FailLocked(d.id, time_next, now, reason);
      ++count.retried;
    }
    stats_.nacked += count.retried;
    if (count.retried + count.dead > 0) {
      ReleaseDueLocked(now);
      sends = PumpLocked();
    }
  }
  Deliver(std::move(sends));
  return count;
}

int64_t GroupFeed::Redrive(const std::vector<std::string>& ids, bool all) {
  std::vector<Send> sends;
  size_t n = 0;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = clock_->NowNanos();
    for (const std::string& id : ledger_.Redrive(ids, all, now)) {
      GroupExceptionRow row;
      row.id = id;
      row.attempts = 0;
      row.time_next = now;
      unwritten_[id] = std::move(row);
      ++n;
    }
    if (n > 0) {
      ReleaseDueLocked(now);
      sends = PumpLocked();
    }
  }
  Deliver(std::move(sends));
  return static_cast<int64_t>(n);
}

void GroupFeed::LoadExceptions(const std::vector<GroupExceptionRow>& rows) {
  absl::MutexLock lock(&mu_);
  for (const GroupExceptionRow& row : rows) {
    const bool dead = row.time_dead.has_value() || !row.time_next.has_value();
    ledger_.Load(row.id, row.attempts,
                 dead ? std::nullopt : std::optional<int64_t>(row.time_next));
  }
}

void GroupFeed::Tick() {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    const int64_t now = clock_->NowNanos();
    for (const GroupLedger::Expired& e : ledger_.ExpiredAt(now)) {
      ++stats_.timed_out;
      std::optional<std::string> why = DeathReasonLocked(e.id, e.sends, now);
      if (why.has_value()) {
        FailLocked(e.id, std::nullopt, now, *std::move(why));
        continue;
      }
      // As the default group: resent ack_wait + backoff after the send.
      FailLocked(
          e.id,
          e.deadline + RedeliveryBackoffNanos(options_.settings, e.sends - 1,
                                              jitter_->Next()),
          now, "");
    }
    ReleaseDueLocked(now);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void GroupFeed::ReleaseDueLocked(int64_t now) {
  mu_.AssertHeld();
  for (const std::string& id : ledger_.Due(now)) {
    if (payloads_.contains(id)) {
      ledger_.Resend(id);
    } else if (!fetching_.contains(id)) {
      fetch_.insert(id);
    }
  }
}

bool GroupFeed::HasWork() const {
  absl::MutexLock lock(&mu_);
  if (clock_->MonotonicNow() < retry_flush_after_) return false;
  // A floor moved by the binlog alone waits for the next ack's flush.
  return !unwritten_.empty() || !fetch_.empty();
}

bool GroupFeed::RequestFlush(std::function<void(absl::Status)> waiter) {
  absl::MutexLock lock(&mu_);
  if (waiter != nullptr) waiters_.push_back(std::move(waiter));
  if (flush_queued_) return false;
  flush_queued_ = true;
  return true;
}

GroupFeed::Flush GroupFeed::TakeFlush() {
  absl::MutexLock lock(&mu_);
  flush_queued_ = false;
  Flush flush;
  flush.waiters.swap(waiters_);
  for (auto& [id, row] : unwritten_) {
    if (row.has_value()) {
      flush.upserts.push_back(*std::move(row));
    } else {
      flush.deletes.push_back(id);
    }
  }
  unwritten_.clear();
  for (const std::string& id : fetch_) {
    fetching_.insert(id);
    flush.fetch.push_back(id);
  }
  fetch_.clear();
  return flush;
}

void GroupFeed::ExceptionsWritten(const Flush& flush,
                                  const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (status.ok()) {
    for (const GroupExceptionRow& row : flush.upserts) {
      ledger_.Recorded(row.id);
    }
    return;
  }
  retry_flush_after_ = clock_->MonotonicNow() + options_.flush_retry;
  // Written again later, unless a newer write of the same row came.
  for (const GroupExceptionRow& row : flush.upserts) {
    unwritten_.try_emplace(row.id, row);
  }
  for (const std::string& id : flush.deletes) {
    unwritten_.try_emplace(id, std::nullopt);
  }
}

void GroupFeed::Fetched(const std::vector<std::string>& asked,
                        absl::StatusOr<std::vector<Message>> rows) {
  std::vector<Send> sends;
  std::vector<std::string> gone;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& id : asked) fetching_.erase(id);
    if (!rows.ok()) {
      retry_flush_after_ = clock_->MonotonicNow() + options_.flush_retry;
      for (const std::string& id : asked) {
        if (ledger_.Sends(id).has_value() && !payloads_.contains(id)) {
          fetch_.insert(id);
        }
      }
      return;
    }
    absl::flat_hash_set<std::string> found;
    for (Message& m : *rows) {
      found.insert(m.id);
      if (ledger_.Sends(m.id).has_value()) {
        payloads_.insert_or_assign(m.id, std::move(m));
      }
    }
    for (const std::string& id : asked) {
      if (!found.contains(id) && ledger_.Sends(id).has_value() &&
          !payloads_.contains(id)) {
        gone.push_back(id);
      }
    }
    // A row that left the table cannot be sent: settled for the group.
    stats_.gone += SettleLocked(gone, nullptr);
    ReleaseDueLocked(clock_->NowNanos());
    sends = PumpLocked();
  }
  if (!gone.empty()) {
    LogTableWarning(row_.keyspace, row_.table, "group \"", row_.name, "\" of `",
                    row_.keyspace, "`.`", row_.table, "`: ", gone.size(),
                    " message(s) to send again are no longer in the table "
                    "(first id ",
                    gone.front(), "); settled for the group");
  }
  Deliver(std::move(sends));
}

std::string GroupFeed::floor() const {
  absl::MutexLock lock(&mu_);
  return FormatGtidList(ledger_.floor());
}

std::optional<std::string> GroupFeed::FloorToWrite() const {
  absl::MutexLock lock(&mu_);
  if (!FloorMovedLocked()) return std::nullopt;
  return FormatGtidList(ledger_.floor());
}

void GroupFeed::FloorWritten(const std::string& floor) {
  absl::MutexLock lock(&mu_);
  written_floor_ = floor;
}

void GroupFeed::Close(absl::Status status) {
  std::vector<Sub> subs;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    subs.swap(subs_);
  }
  for (Sub& s : subs) s.subscriber->Close(status);
}

GroupFeed::Stats GroupFeed::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.pending = ledger_.pending();
  s.waiting = ledger_.waiting();
  s.dead = ledger_.dead();
  s.floor = FormatGtidList(ledger_.floor());
  s.queued = ledger_.queued();
  for (const auto& [id, m] : payloads_) {
    if (m.seen_at > 0 &&
        (s.oldest_event_ns == 0 || m.seen_at < s.oldest_event_ns)) {
      s.oldest_event_ns = m.seen_at;
    }
  }
  return s;
}

std::vector<GroupFeed::Send> GroupFeed::PumpLocked() {
  mu_.AssertHeld();
  std::vector<Send> sends;
  if (!ledger_.has_queued() || subs_.empty()) return sends;
  const int64_t deadline =
      clock_->NowNanos() +
      (options_.settings.ack_wait == absl::InfiniteDuration()
           ? GroupLedger::kNever / 2
           : absl::ToInt64Nanoseconds(options_.settings.ack_wait));
  bool progress = true;
  while (progress && ledger_.has_queued() && !subs_.empty()) {
    progress = false;
    for (size_t i = 0; i < subs_.size() && ledger_.has_queued(); ++i) {
      Sub& sub = subs_[(next_sub_ + i) % subs_.size()];
      if (sub.outstanding >= max_batches_) continue;
      size_t room = batch_size_;
      if (sub.max_unacked > 0) {
        const size_t held = ledger_.held(sub.id);
        const size_t cap = static_cast<size_t>(sub.max_unacked);
        room = std::min(room, held >= cap ? 0 : cap - held);
      }
      if (room == 0) continue;
      std::vector<GroupLedger::Taken> taken =
          ledger_.Take(sub.id, room, deadline);
      MessageBatch batch;
      batch.reserve(taken.size());
      for (GroupLedger::Taken& t : taken) {
        Message m = payloads_.at(t.id);
        m.epoch = t.sends;
        batch.push_back(std::move(m));
      }
      stats_.sent += static_cast<int64_t>(batch.size());
      ++sub.outstanding;
      sends.push_back(
          Send{sub.subscriber, sub.next_sequence++, std::move(batch)});
      progress = true;
    }
    next_sub_ = (next_sub_ + 1) % subs_.size();
  }
  return sends;
}

void GroupFeed::Deliver(std::vector<Send> sends) {
  for (Send& s : sends) s.subscriber->Send(s.sequence, std::move(s.batch));
}

}  // namespace msgq
