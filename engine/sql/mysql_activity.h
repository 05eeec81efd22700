// MysqlActivity: whether MySQL answers msgqd's statements, for readiness.
//
// Every MysqlConnection made from MysqlOptions with an `activity` reports
// each statement to it: Begin() when it is sent, End() when MySQL answered
// (a result or an error of the server's) or the client gave up (the
// connection was lost or its io_timeout ran out). A statement without a
// result set (MysqlConnection::Execute: INSERT, UPDATE, DELETE, COMMIT) is a
// write, one with rows (Query, ForEachRow) a read. Health() is then:
//
//   UNAVAILABLE "MySQL has not answered msgqd's writes for 12s ..." when a
//   write (or a read) has waited longer than `stall_after` for its answer:
//   one still in flight, or one the client gave up on followed by others
//   that are not answered either (a full disk holding every commit, a
//   FLUSH TABLES WITH READ LOCK, a stopped server). A lost statement with
//   nothing after it counts for `stall_after` after it ended, so one broken
//   connection of an idle msgqd does not keep it unready.
//
//   UNAVAILABLE "MySQL refuses msgqd's writes: it is read-only ..." when a
//   write failed with ER_OPTION_PREVENTS_STATEMENT (1290) or
//   ER_READ_ONLY_MODE (1836) and no later ObserveReadOnly() saw @@read_only
//   and @@innodb_read_only both off. A user MySQL lets write while read-only
//   (SUPER, READ_ONLY ADMIN) never gets those errors, so its msgqd stays
//   ready.
//
//   OK otherwise, and again as soon as the statements are answered or the
//   server is writable.
//
// Example:
//   auto activity = std::make_shared<MysqlActivity>(&clock, absl::Seconds(10));
//   options.activity = activity;      // every connection of `options`
//   ...
//   absl::Status ready = activity->Health();
//
// Thread-safe. Begin() and End() take one mutex for a few map operations;
// no I/O.
#ifndef MSGQ_ENGINE_SQL_MYSQL_ACTIVITY_H_
#define MSGQ_ENGINE_SQL_MYSQL_ACTIVITY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace msgq {

class MysqlActivity {
 public:
  enum class Kind { kRead, kWrite };

  // `clock`'s MonotonicNow() times the statements; it must outlive this.
  // `stall_after` > 0.
  MysqlActivity(const Clock* clock, absl::Duration stall_after)
      : clock_(clock), stall_after_(stall_after) {}
  MysqlActivity(const MysqlActivity&) = delete;
  MysqlActivity& operator=(const MysqlActivity&) = delete;

  // A statement of `kind` was sent; the token is for End().
  uint64_t Begin(Kind kind);
  // It ended: `answered` when MySQL replied (`error_code` 0 on success, the
  // server's error number otherwise), false when the client gave up.
  // `error` is MySQL's text of the error, for Health().
  void End(uint64_t token, bool answered, unsigned int error_code,
           absl::string_view error);
  // It was never sent (the connection was already broken).
  void Cancel(uint64_t token);
  // What a probe read: @@read_only and @@innodb_read_only. Both off means
  // the server takes writes again, and a refusal seen before is forgotten.
  void ObserveReadOnly(bool read_only, bool innodb_read_only);

  // OK, or UNAVAILABLE with the cause (above).
  absl::Status Health() const;
  absl::Duration stall_after() const { return stall_after_; }

 private:
  struct InFlight {
    Kind kind;
    absl::Time began;
  };
  // Per kind: statements the client gave up on, with none answered since.
  struct Unanswered {
    std::optional<absl::Time> since;  // the first one's Begin
    absl::Time last_end;
  };
  std::optional<absl::Duration> StalledLocked(Kind kind, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const absl::Duration stall_after_;
  mutable absl::Mutex mu_;
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  Unanswered unanswered_[2] ABSL_GUARDED_BY(mu_);
  // The last write refused because the server is read-only, with what the
  // last probe read (when any did since).
  std::optional<std::string> refused_ ABSL_GUARDED_BY(mu_);
  std::string read_only_vars_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_ACTIVITY_H_
