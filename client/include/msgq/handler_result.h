// HandlerResult is what a Subscriber handler decides for one message: ack it,
// retry it (after a delay or the table's backoff), or declare it dead.
//
// A handler may also return an absl::Status, which converts implicitly: OK
// acks, an error retries with the table's backoff and the status message as
// the reason (stored in the row's last_error column if the table has one).
//
// Example:
//   [](const Message& msg) -> HandlerResult {
//     if (!Parse(msg).ok()) return HandlerResult::Dead("unparseable");
//     if (!backend.up()) {
//       return HandlerResult::RetryAfter(absl::Seconds(30), "backend down");
//     }
//     return Process(msg);  // absl::Status: OK acks, an error retries
//   }
//
// A plain value type; thread-compatible.
#ifndef MSGQ_HANDLER_RESULT_H_
#define MSGQ_HANDLER_RESULT_H_

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace msgq {

class HandlerResult {
 public:
  enum class Kind { kAck, kRetry, kDead };

  // Done: acknowledge the message.
  static HandlerResult Ack() { return HandlerResult(Kind::kAck, {}, {}); }
  // Not done: send it again after the table's backoff for its epoch.
  static HandlerResult Retry(std::string reason = "") {
    return HandlerResult(Kind::kRetry, std::nullopt, std::move(reason));
  }
  // Not done: send it again after `delay` (zero = as soon as possible;
  // a negative delay is treated as zero).
  static HandlerResult RetryAfter(absl::Duration delay,
                                  std::string reason = "") {
    return HandlerResult(Kind::kRetry, std::max(delay, absl::ZeroDuration()),
                         std::move(reason));
  }
  // Never going to work: dead now, whatever the attempts left.
  static HandlerResult Dead(std::string reason) {
    return HandlerResult(Kind::kDead, std::nullopt, std::move(reason));
  }

  // OK = Ack(); an error = Retry(status.message()).
  HandlerResult(const absl::Status& status)  // NOLINT(runtime/explicit)
      : kind_(status.ok() ? Kind::kAck : Kind::kRetry),
        reason_(status.ok() ? "" : std::string(status.message())) {}

  Kind kind() const { return kind_; }
  // Only for kRetry; nullopt = the table's backoff.
  const std::optional<absl::Duration>& delay() const { return delay_; }
  const std::string& reason() const { return reason_; }

  bool operator==(const HandlerResult& other) const {
    return kind_ == other.kind_ && delay_ == other.delay_ &&
           reason_ == other.reason_;
  }

 private:
  HandlerResult(Kind kind, std::optional<absl::Duration> delay,
                std::string reason)
      : kind_(kind), delay_(delay), reason_(std::move(reason)) {}

  Kind kind_;
  std::optional<absl::Duration> delay_;
  std::string reason_;
};

}  // namespace msgq

#endif  // MSGQ_HANDLER_RESULT_H_
