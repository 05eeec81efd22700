// FailurePolicy: see failure_policy.h.
#include "engine/queue/manager/failure_policy.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace msgq {

FailurePolicy::FailurePolicy(const TableSettings& settings,
                             size_t max_message_bytes,
                             int death_lines_per_minute)
    : max_attempts_(settings.max_attempts),
      max_age_(settings.max_age),
      max_message_bytes_(max_message_bytes),
      death_lines_per_minute_(death_lines_per_minute) {}

std::optional<std::string> FailurePolicy::DeathReason(const Message& m,
                                                      int64_t now) const {
  if (m.unread_bytes > 0 || m.WireBytes() > max_message_bytes_) {
    return absl::StrCat(
        "row of ", std::max(m.WireBytes(), m.unread_bytes),
        " bytes is larger than the stream limit of ", max_message_bytes_,
        " bytes (msgqd --max_message_bytes; raise it together with the "
        "clients' gRPC max receive message size)");
  }
  if (max_attempts_ > 0 && m.epoch >= max_attempts_) {
    return absl::StrCat("not acked after ", m.epoch,
                        " sends (msgq_max_attempts=", max_attempts_, ")");
  }
  if (max_age_ > absl::ZeroDuration() && m.epoch >= 1 && m.time_created > 0 &&
      now - m.time_created > absl::ToInt64Nanoseconds(max_age_)) {
    return absl::StrCat(
        "not acked and first enqueued ",
        std::floor(static_cast<double>(now - m.time_created) / 1e9),
        " s ago (msgq_max_age=", absl::ToDoubleSeconds(max_age_), ")");
  }
  return std::nullopt;
}

std::optional<std::string> FailurePolicy::DeathLine(int64_t count,
                                                    const std::string& what,
                                                    absl::Time mono) {
  if (mono - minute_ >= absl::Minutes(1)) {
    minute_ = mono;
    lines_left_ = death_lines_per_minute_;
  }
  if (lines_left_ <= 0) {
    unlogged_ += count;
    return std::nullopt;
  }
  --lines_left_;
  std::string line = what;
  if (unlogged_ > 0) {
    absl::StrAppend(&line, " (and ", unlogged_,
                    " earlier deaths not logged: over ",
                    death_lines_per_minute_, " lines a minute)");
    unlogged_ = 0;
  }
  return line;
}

void FailurePolicy::CountSoon(bool dead_list) {
  next_count_ = absl::InfinitePast();
  if (dead_list) dead_list_seen_ = true;
}

bool FailurePolicy::CountDue(absl::Time mono, bool watched) {
  if (mono < next_count_ || (!watched && !dead_list_seen_)) return false;
  next_count_ = mono + kCountEvery;
  dead_list_seen_ = false;
  return true;
}

}  // namespace msgq
