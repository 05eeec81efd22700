#include "engine/sql/mysql_activity.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace msgq {
namespace {

// The errors of a server that takes no writes: --read-only for this user
// (ER_OPTION_PREVENTS_STATEMENT), innodb_read_only (ER_READ_ONLY_MODE,
// ER_OPEN_AS_READONLY).
bool IsReadOnlyRefusal(unsigned int code) {
  return code == 1290 || code == 1836 || code == 1036;
}

int Index(MysqlActivity::Kind kind) {
  return kind == MysqlActivity::Kind::kWrite ? 1 : 0;
}

}  // namespace

uint64_t MysqlActivity::Begin(Kind kind) {
  const absl::Time now = clock_->MonotonicNow();
  absl::MutexLock lock(&mu_);
  const uint64_t token = ++next_token_;
  in_flight_.emplace(token, InFlight{kind, now});
  return token;
}

void MysqlActivity::End(uint64_t token, bool answered, unsigned int error_code,
                        absl::string_view error) {
  const absl::Time now = clock_->MonotonicNow();
  absl::MutexLock lock(&mu_);
  auto it = in_flight_.find(token);
  if (it == in_flight_.end()) return;
  const InFlight statement = it->second;
  in_flight_.erase(it);
  Unanswered& unanswered = unanswered_[Index(statement.kind)];
  if (!answered) {
    unanswered.since =
        std::min(unanswered.since.value_or(statement.began), statement.began);
    unanswered.last_end = now;
    return;
  }
  unanswered.since.reset();
  if (statement.kind == Kind::kWrite && IsReadOnlyRefusal(error_code)) {
    refused_ = std::string(error);
  }
}

void MysqlActivity::Cancel(uint64_t token) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(token);
}

void MysqlActivity::ObserveReadOnly(bool read_only, bool innodb_read_only) {
  absl::MutexLock lock(&mu_);
  if (!read_only && !innodb_read_only) {
    refused_.reset();
    read_only_vars_.clear();
    return;
  }
  read_only_vars_ =
      absl::StrCat(" (@@read_only=", read_only ? 1 : 0,
                   ", @@innodb_read_only=", innodb_read_only ? 1 : 0, ")");
}

std::optional<absl::Duration> MysqlActivity::StalledLocked(
    Kind kind, absl::Time now) const {
  mu_.AssertHeld();
  std::optional<absl::Time> oldest;
  for (const auto& [token, statement] : in_flight_) {
    if (statement.kind != kind) continue;
    oldest = std::min(oldest.value_or(statement.began), statement.began);
  }
  const Unanswered& unanswered = unanswered_[Index(kind)];
  if (unanswered.since.has_value() &&
      (oldest.has_value() || now - unanswered.last_end < stall_after_)) {
    oldest = std::min(oldest.value_or(*unanswered.since), *unanswered.since);
  }
  if (!oldest.has_value() || now - *oldest <= stall_after_) return std::nullopt;
  return now - *oldest;
}

absl::Status MysqlActivity::Health() const {
  const absl::Time now = clock_->MonotonicNow();
  absl::MutexLock lock(&mu_);
  if (refused_.has_value()) {
    return absl::UnavailableError(
        absl::StrCat("MySQL refuses msgqd's writes: it is read-only",
                     read_only_vars_, ": ", *refused_));
  }
  for (Kind kind : {Kind::kWrite, Kind::kRead}) {
    std::optional<absl::Duration> stalled = StalledLocked(kind, now);
    if (!stalled.has_value()) continue;
    return absl::UnavailableError(absl::StrCat(
        "MySQL has not answered msgqd's ",
        kind == Kind::kWrite ? "writes" : "reads", " for ",
        absl::FormatDuration(absl::Trunc(*stalled, absl::Milliseconds(100))),
        " (over --mysql_stall_timeout=", absl::FormatDuration(stall_after_),
        "): is its disk full, a global read lock held, or the server "
        "stopped?"));
  }
  return absl::OkStatus();
}

}  // namespace msgq
