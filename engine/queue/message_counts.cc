#include "engine/queue/message_counts.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace msgq {

bool MessageCounts::Times::Add(int64_t time_next, int64_t delta,
                               size_t max_times) {
  const int64_t key = Key(time_next, max_times);
  auto it = times_.find(key);
  if (it == times_.end()) {
    if (delta < 0) return false;  // a row never counted
    it = times_.emplace(key, 0).first;
  }
  if (it->second + delta < 0) return false;
  it->second += delta;
  total_ += delta;
  if (key <= boundary_) due_ += delta;
  if (it->second == 0) times_.erase(it);
  return true;
}

int64_t MessageCounts::Times::Due(int64_t now_ns) {
  if (now_ns < boundary_) {  // MySQL's clock stepped back: recount
    due_ = 0;
    boundary_ = std::numeric_limits<int64_t>::min();
  }
  auto it = boundary_ == std::numeric_limits<int64_t>::min()
                ? times_.begin()
                : times_.upper_bound(boundary_);
  for (; it != times_.end() && it->first <= now_ns; ++it) due_ += it->second;
  boundary_ = now_ns;
  return due_;
}

std::optional<int64_t> MessageCounts::Times::OldestDue(int64_t now_ns) const {
  auto first = times_.upper_bound(0);
  if (first == times_.end() || first->first > now_ns) return std::nullopt;
  return first->first;
}

int64_t MessageCounts::Times::Key(int64_t time_next, size_t max_times) const {
  if (times_.empty() || times_.size() < max_times ||
      times_.contains(time_next)) {
    return time_next;
  }
  auto above = times_.lower_bound(time_next);
  if (above != times_.end()) return above->first;
  return std::prev(times_.end())->first;
}

absl::StatusOr<MessageCounts::GtidPosition> MessageCounts::ParseGtidPosition(
    absl::string_view text) {
  GtidPosition position;
  for (absl::string_view gtid : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts =
        absl::StrSplit(absl::StripAsciiWhitespace(gtid), '-');
    uint32_t domain = 0;
    uint64_t sequence = 0;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &domain) ||
        !absl::SimpleAtoi(parts[2], &sequence)) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a GTID position: ", text));
    }
    position[domain] = sequence;
  }
  return position;
}

void MessageCounts::Apply(const std::vector<RowChange>& changes) {
  absl::MutexLock lock(&mu_);
  applied_ += changes.size();
  if (reading_ && !journal_full_) {
    if (journal_.size() + changes.size() > options_.max_journal) {
      journal_full_ = true;
      journal_.clear();
    } else {
      for (const RowChange& c : changes) {
        journal_.push_back(c);
        journal_.back().row.reset();  // the state is all the counts need
      }
    }
  }
  if (!loaded_) return;  // the first Install counts them
  for (const RowChange& c : changes) {
    if (!CountedLocked(c)) ApplyLocked(c);
  }
}

bool MessageCounts::CountedLocked(const RowChange& c) const {
  mu_.AssertHeld();
  if (!installed_at_.has_value() || c.gtid.empty()) return false;
  absl::StatusOr<GtidPosition> gtid = ParseGtidPosition(c.gtid);
  if (!gtid.ok() || gtid->size() != 1) return false;
  auto included = installed_at_->find(gtid->begin()->first);
  return included != installed_at_->end() &&
         gtid->begin()->second <= included->second;
}

void MessageCounts::ApplyLocked(const RowChange& c) {
  mu_.AssertHeld();
  if (c.deleted) {
    if (!c.time_acked.has_value()) MoveLocked(c.time_next, c.sent, -1);
    return;
  }
  if (!c.inserted) {
    if (!c.has_before) {
      stale_ = true;  // the before state is unknown
      return;
    }
    if (!c.acked_before) MoveLocked(c.time_next_before, c.sent_before, -1);
  }
  if (!c.time_acked.has_value()) MoveLocked(c.time_next, c.sent, +1);
}

uint64_t MessageCounts::BeginRead() {
  absl::MutexLock lock(&mu_);
  journal_.clear();
  journal_full_ = false;
  reading_ = true;
  return applied_;
}

void MessageCounts::AbandonRead() {
  absl::MutexLock lock(&mu_);
  journal_.clear();
  reading_ = false;
}

absl::Status MessageCounts::Install(
    uint64_t token, Snapshot snapshot,
    const std::optional<GtidPosition>& position) {
  absl::MutexLock lock(&mu_);
  // The changes the snapshot does not hold, to apply on top of it.
  std::vector<const RowChange*> after;
  bool known = position.has_value() && !journal_full_ &&
               journal_.size() == applied_ - token;
  for (const RowChange& c : journal_) {
    if (!known) break;
    absl::StatusOr<GtidPosition> gtid = ParseGtidPosition(c.gtid);
    if (c.gtid.empty() || !gtid.ok() || gtid->size() != 1) {
      known = false;
      break;
    }
    const auto [domain, sequence] = *gtid->begin();
    auto included = position->find(domain);
    if (included == position->end() || sequence > included->second) {
      after.push_back(&c);
    }
  }
  if (!known && token != applied_) {
    journal_.clear();
    reading_ = false;
    return absl::AbortedError("rows changed during the counting read");
  }
  const std::map<int64_t, int64_t> old_unsent = unsent_.map();
  const std::map<int64_t, int64_t> old_sent = sent_.map();
  const int64_t old_dead = dead_;
  const bool was_loaded = loaded_;
  unsent_.Clear();
  sent_.Clear();
  for (const auto& [time_next, rows] : snapshot.unsent_by_time_next) {
    if (rows > 0) unsent_.Add(time_next, rows, options_.max_times);
  }
  for (const auto& [time_next, rows] : snapshot.sent_by_time_next) {
    if (rows > 0) sent_.Add(time_next, rows, options_.max_times);
  }
  dead_ = snapshot.dead;
  loaded_ = true;
  stale_ = false;
  for (const RowChange* c : after) ApplyLocked(*c);
  journal_.clear();
  reading_ = false;
  installed_at_ = known ? position : std::nullopt;
  if (was_loaded &&
      (dead_ != old_dead || !(unsent_ == old_unsent) || !(sent_ == old_sent))) {
    ++corrections_;
  }
  return absl::OkStatus();
}

void MessageCounts::MarkStale() {
  absl::MutexLock lock(&mu_);
  stale_ = true;
}

std::optional<MessageCounts::Counts> MessageCounts::Get(int64_t now_ns) {
  absl::MutexLock lock(&mu_);
  if (!loaded_) return std::nullopt;
  Counts counts;
  const int64_t unsent_due = unsent_.Due(now_ns);
  const int64_t sent_due = sent_.Due(now_ns);
  counts.ready = unsent_due + sent_due;
  counts.scheduled = unsent_.total() - unsent_due;
  counts.in_flight = sent_.total() - sent_due;
  counts.dead = dead_;
  const std::optional<int64_t> a = unsent_.OldestDue(now_ns);
  const std::optional<int64_t> b = sent_.OldestDue(now_ns);
  if (a.has_value() || b.has_value()) {
    counts.oldest_due_ns = std::min(a.value_or(now_ns), b.value_or(now_ns));
  }
  counts.now_ns = now_ns;
  counts.corrections = corrections_;
  return counts;
}

bool MessageCounts::loaded() const {
  absl::MutexLock lock(&mu_);
  return loaded_;
}

bool MessageCounts::stale() const {
  absl::MutexLock lock(&mu_);
  return stale_;
}

int64_t MessageCounts::corrections() const {
  absl::MutexLock lock(&mu_);
  return corrections_;
}

void MessageCounts::MoveLocked(std::optional<int64_t> time_next, bool sent,
                               int64_t delta) {
  mu_.AssertHeld();
  if (!time_next.has_value()) {
    if (dead_ + delta < 0) {
      stale_ = true;
      return;
    }
    dead_ += delta;
    return;
  }
  Times& times = sent ? sent_ : unsent_;
  Times& other = sent ? unsent_ : sent_;
  // A counting read does not tell sent from never sent among due rows (see
  // Snapshot): a row leaving may sit in the other multiset.
  if (!times.Add(*time_next, delta, options_.max_times) &&
      (delta > 0 || !other.Add(*time_next, delta, options_.max_times))) {
    stale_ = true;
  }
}

}  // namespace msgq
