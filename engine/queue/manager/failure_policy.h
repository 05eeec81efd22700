// FailurePolicy: a table's rules for messages that fail, as pure logic.
// Which row read due must die instead of being sent (too large for the
// stream, msgq_max_attempts sends, older than msgq_max_age), how many death
// lines a minute are logged (the rest are counted and named in the next
// line), and when the dead rows are counted (for tables someone watches, at
// most once a kCountEvery, at once after a subscriber came or a dead list
// was asked for).
//
// Example:
//   FailurePolicy failures(table.settings, options.max_message_bytes,
//                          options.death_log_lines_per_minute);
//   if (std::optional<std::string> why = failures.DeathReason(m, now)) {
//     ...  // a death write instead of a send
//   }
//   if (std::optional<std::string> line = failures.DeathLine(3, what, mono))
//     ...  // log it
//   if (failures.CountDue(mono, /*watched=*/true)) ...  // CountDead()
//
// Errors: none; every answer is a value.
// Thread-safety: thread-compatible. The owning MessageManager guards it
// with its mutex; callers pass the clocks' times.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_FAILURE_POLICY_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_FAILURE_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "engine/queue/message.h"
#include "engine/table_settings.h"

namespace msgq {

class FailurePolicy {
 public:
  // How often the dead rows are counted at most.
  static constexpr absl::Duration kCountEvery = absl::Minutes(1);

  // `settings`: the table's msgq_max_attempts and msgq_max_age;
  // `max_message_bytes`: the largest row a stream carries;
  // `death_lines_per_minute`: the death log's budget.
  FailurePolicy(const TableSettings& settings, size_t max_message_bytes,
                int death_lines_per_minute);

  // Why `m`, just read due from MySQL at `now` (Unix ns), must die instead
  // of being sent; nullopt when it may be sent.
  std::optional<std::string> DeathReason(const Message& m, int64_t now) const;

  // The line to log for `count` messages that died, described by `what`,
  // at `mono` (monotonic); nullopt when the minute's budget is spent (the
  // count then joins the next line's "earlier deaths not logged").
  std::optional<std::string> DeathLine(int64_t count, const std::string& what,
                                       absl::Time mono);

  // The dead rows are counted at the next chance: a subscriber came
  // (`dead_list` false) or a dead list was asked for (true: the count runs
  // even if nobody subscribes).
  void CountSoon(bool dead_list);
  // Whether to count the dead rows now, at `mono`, for a table that
  // `watched` (has subscribers); true starts the next interval.
  bool CountDue(absl::Time mono, bool watched);

 private:
  const int max_attempts_;
  const absl::Duration max_age_;
  const size_t max_message_bytes_;
  const int death_lines_per_minute_;
  // The death log's budget: lines left in the current minute, and deaths
  // not logged since the last line.
  absl::Time minute_ = absl::InfinitePast();
  int lines_left_ = 0;
  int64_t unlogged_ = 0;
  // When the dead rows may be counted again, and whether a dead list was
  // asked for since the last count.
  absl::Time next_count_ = absl::InfinitePast();
  bool dead_list_seen_ = false;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_FAILURE_POLICY_H_
