// FakeMessageStore: an in-memory MessageStore for unit tests (test-only;
// fake_message_store.cc and fake_message_store_write.cc are compiled into
// msgq_engine_test).
//
// It holds the rows of one message table whose streamed columns are `id` and
// `payload`, and applies the same semantics as the SQL of MysqlMessageStore:
// PollDue returns unacked rows with time_next <= now ordered by priority,
// time_next, id (ids compare as numbers when both are integers, as MySQL
// orders an integer id column; otherwise bytewise); Write postpones and acks
// only rows still pending (unacked, not dead), then applies nacks, extends
// and redrives (message_store.h), with the failure units of
// MessageStore::Write (the postpones, each group); Purge deletes rows acked
// before the cutoff; PurgeDead, CountDead and ListDead read dead rows
// (time_acked and time_next NULL). Counts are of rows changed, as MariaDB
// reports them (a retry or extend to the time_next a row already has, with
// nothing else changed, counts 0). The table's optional columns and limits are
// a Schema (by default every optional column exists and nothing limits
// retries); last_error holds LastErrorText(reason, last_error_chars), exactly
// what the SQL stores in a utf8mb4 column. Ids are not validated (the fake has
// no id column type): use the failure injection below for a malformed id.
//
// Every call is counted and recorded (the WriteBatch of each Write, the
// arguments and result of each poll, purge and dead-row read), so tests can
// assert "one Write per round, with these ids". A call can be made to fail
// with a given status (FailNext for the next N calls of one kind, FailAll for
// an outage until Recover); a failed call is counted and recorded but
// changes nothing. A Write failed so with a permanent code (not UNAVAILABLE
// or ABORTED) is reported as the store contract says: every unit failed with
// that status. One unit can be made to fail permanently on its own:
// FailGroupsWith(kind, id) for every group of that kind holding `id` (a
// redrive group with all = true holds the id ""), FailPostponesNext for the
// postpones. `before_call` runs at the start of every call, to simulate
// events that happen while a statement is in flight.
//
// Not thread-safe: the unit tests drive MessageManager::RunOnce() from one
// thread, which is the only user of the store.
#ifndef MSGQ_ENGINE_QUEUE_FAKE_MESSAGE_STORE_H_
#define MSGQ_ENGINE_QUEUE_FAKE_MESSAGE_STORE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/message_table.h"
#include "engine/queue/message.h"
#include "engine/queue/message_store.h"

namespace msgq {

class FakeMessageStore final : public MessageStore {
 public:
  struct Row {
    std::string id;
    int64_t priority = 0;
    std::optional<int64_t> time_next = 0;  // nullopt = SQL NULL
    int64_t epoch = 0;
    std::optional<int64_t> time_acked;  // nullopt = SQL NULL (unacked)
    std::optional<std::string> payload = std::string();  // nullopt = NULL
    std::optional<int64_t> time_created;                 // nullopt = NULL
    std::optional<int64_t> time_dead;                    // nullopt = NULL
    std::optional<std::string> last_error;               // nullopt = NULL
    // The msgq_concurrency_by column (Message::fair_key); nullopt = NULL.
    std::optional<std::string> key;
  };

  // The table's optional columns and failure limits (message_table.h).
  struct Schema {
    bool has_time_created = true;
    bool has_time_dead = true;
    int last_error_chars = 255;  // 0 = no last_error column
    int max_attempts = 0;        // 0 = unlimited
    absl::Duration max_age;      // zero = unlimited
  };
  // The Schema of a built table.
  static Schema SchemaOf(const MessageTable& table);

  enum class Op {
    kPollDue,
    kPollDueIds,
    kFetchDue,
    kNextDueAfter,
    kWrite,
    kPurge,
    kPurgeDead,
    kCountDead,
    kListDead,
  };
  // The kinds of Write groups that can be made to fail on their own.
  enum class Group { kAck, kNack, kExtend, kRedrive };

  struct PollCall {
    int64_t now = 0;
    int64_t limit = 0;
    std::vector<std::string> ids;  // returned (empty when the call failed)
    absl::Status status;
  };
  struct WriteCall {
    WriteBatch batch;
    absl::Status status;  // the injected call failure, if any
    WriteResult result;   // when the call returned one
  };
  struct PurgeCall {  // Purge and PurgeDead
    int64_t cutoff = 0;
    int limit = 0;
    int64_t deleted = 0;
    absl::Status status;
  };
  struct ListDeadCall {
    std::string after_id;
    int limit = 0;
    std::vector<std::string> ids;  // returned
    absl::Status status;
  };

  // ---- Setting up rows -------------------------------------------------

  void set_schema(Schema schema) { schema_ = schema; }
  const Schema& schema() const { return schema_; }

  // Inserts or replaces the row with `row.id`.
  void Put(Row row);
  // An unacked row due at `time_next` with payload "payload-<id>".
  void PutDue(absl::string_view id, int64_t time_next, int64_t priority = 0,
              int64_t epoch = 0);
  // A row acked at `time_acked` (time_next NULL, as an ack leaves it).
  void PutAcked(absl::string_view id, int64_t time_acked);
  // A dead row (time_acked and time_next NULL), as a nack leaves it.
  void PutDead(absl::string_view id, int64_t epoch, int64_t time_dead,
               absl::string_view last_error = "");
  void Erase(absl::string_view id) { rows_.erase(std::string(id)); }

  // The row with `id`, or nullptr.
  const Row* Find(absl::string_view id) const;
  size_t size() const { return rows_.size(); }
  std::vector<std::string> ids() const;

  // ---- Failure injection -----------------------------------------------

  // The next `times` calls of `op` fail with `status`.
  void FailNext(Op op, absl::Status status, int times = 1);
  // Every group of `kind` holding `id` fails with `status` (a permanent
  // code) until Recover(); the other units of the Write still apply.
  void FailGroupsWith(Group kind, absl::string_view id, absl::Status status);
  void FailAckGroupsWith(absl::string_view id, absl::Status status) {
    FailGroupsWith(Group::kAck, id, std::move(status));
  }
  // The postpones of the next `times` Writes fail with `status` (permanent)
  // and are not applied; the groups still apply.
  void FailPostponesNext(absl::Status status, int times = 1);
  // Every call fails with `status` until Recover() (a MySQL outage).
  void FailAll(absl::Status status) { fail_all_ = std::move(status); }
  // Another transaction holds the rows of `ids` locked until UnlockRows:
  // as MysqlMessageStore reports it, Write leaves out their postpones and
  // acks (WriteResult::locked, sorted) and fails a nack, extend or redrive
  // group naming one with ABORTED; the rest of the Write applies.
  void LockRows(const std::vector<std::string>& ids) {
    locked_.insert(ids.begin(), ids.end());
  }
  void UnlockRows() { locked_.clear(); }
  void Recover();

  // Runs at the start of every call, before failure injection and before
  // the call is recorded. Must not call the store.
  std::function<void(Op)> before_call;

  // ---- What the manager did --------------------------------------------

  int poll_calls() const { return static_cast<int>(polls_.size()); }
  int next_due_calls() const { return next_due_calls_; }
  int write_calls() const { return static_cast<int>(writes_.size()); }
  int purge_calls() const { return static_cast<int>(purges_.size()); }
  int count_dead_calls() const { return count_dead_calls_; }
  // SQL statements issued: one per poll, next-due query, purge and dead-row
  // read; per Write one per distinct postpone time_next, one per ack group,
  // per nack group one per distinct (epoch, time_next) plus one more for a
  // retry when the schema limits retries, per extend group one per distinct
  // epoch, one per redrive group that has ids or is `all`.
  int statements() const { return statements_; }

  const std::vector<PollCall>& polls() const { return polls_; }
  // PollDueByKey calls (ids: what each returned; limit: the poll's), the
  // room each was given, and the ReadInFlight calls.
  const std::vector<PollCall>& key_polls() const { return key_polls_; }
  const std::vector<KeyRoom>& key_rooms() const { return key_rooms_; }
  int in_flight_reads() const { return in_flight_reads_; }
  // PollDueIds calls (ids: what each returned). PollDueIds works only after
  // set_polls_ids(true), so that tests of the one-statement poll keep it.
  const std::vector<PollCall>& id_polls() const { return id_polls_; }
  void set_polls_ids(bool on) { polls_ids_ = on; }
  // MySQL's clock, as MysqlMessageStore's reads judge due by it: when set,
  // the reads (polls, fetches, next-due, in-flight) compare time_next with
  // its Now() instead of the `now` they are given, which is then only
  // recorded (PollCall::now). Null: the `now` given (the default).
  void set_db_clock(const Clock* clock) { db_clock_ = clock; }
  const std::vector<WriteCall>& writes() const { return writes_; }
  const std::vector<PurgeCall>& purges() const { return purges_; }
  const std::vector<PurgeCall>& dead_purges() const { return dead_purges_; }
  const std::vector<ListDeadCall>& dead_lists() const { return dead_lists_; }
  // The id lists FetchDue was called with.
  const std::vector<std::vector<std::string>>& fetches() const {
    return fetches_;
  }

  // ---- MessageStore ------------------------------------------------------

  absl::StatusOr<std::vector<Message>> PollDue(int64_t now,
                                               int64_t limit) override;
  bool polls_ids() const override { return polls_ids_; }
  // PollDue's order within each key (Row::key), at most room.For(key) rows
  // of a key; ReadInFlight: pending rows with a key, epoch > 0 and
  // time_next > now. Both are one statement, recorded as kPollDue.
  absl::StatusOr<std::vector<Message>> PollDueByKey(
      int64_t now, int64_t limit, const KeyRoom& room) override;
  absl::StatusOr<std::vector<InFlightRow>> ReadInFlight(int64_t now) override;
  absl::StatusOr<std::vector<std::string>> PollDueIds(int64_t now,
                                                      int64_t limit) override;
  absl::StatusOr<std::vector<Message>> FetchDue(
      const std::vector<std::string>& ids, int64_t now) override;
  absl::StatusOr<std::optional<int64_t>> NextDueAfter(int64_t now) override;
  absl::StatusOr<WriteResult> Write(const WriteBatch& batch) override;
  // Every read sees every commit: its position is the binlog's end.
  BinlogPosition read_position() const override { return position(); }
  // The binlog's end: one offset per Put and per Write, in one file (a
  // test gives a change it shows the position after the Put that made it).
  BinlogPosition position() const { return {"binlog.000001", commits_}; }
  absl::StatusOr<int64_t> Purge(int64_t cutoff, int limit) override;
  absl::StatusOr<int64_t> PurgeDead(int64_t cutoff, int limit) override;
  absl::StatusOr<int64_t> CountDead() override;
  absl::StatusOr<std::vector<DeadRow>> ListDead(const std::string& after_id,
                                                int limit) override;
  // Records `now` and returns the next of partition_reports (an empty
  // report when none is left). Changes no rows.
  absl::StatusOr<PartitionReport> MaintainPartitions(int64_t now) override {
    partition_calls.push_back(now);
    if (partition_reports.empty()) return PartitionReport{};
    absl::StatusOr<PartitionReport> next = std::move(partition_reports.front());
    partition_reports.pop_front();
    return next;
  }
  // Scripted results of MaintainPartitions, and the `now` of each call.
  std::deque<absl::StatusOr<PartitionReport>> partition_reports;
  std::vector<int64_t> partition_calls;

  // Orders ids as MySQL orders the id column: numerically when both are
  // integers, bytewise otherwise.
  static bool IdLess(const std::string& a, const std::string& b);

 private:
  // Runs the hook and returns the injected failure for `op`, if any.
  absl::Status Begin(Op op);
  // The injected failure of a group of `kind` holding `ids`, or OK.
  absl::Status GroupFailure(Group kind,
                            const std::vector<std::string>& ids) const;
  Message ToMessage(const Row& row) const;
  // Counts and records a poll of kind `op` in `calls` (its status: the
  // injected failure, if any).
  PollCall& StartPoll(Op op, std::vector<PollCall>& calls, int64_t now,
                      int64_t limit);
  // PollDue's rows: pending, due at `now`, in order, at most `limit`.
  std::vector<const Row*> Due(int64_t now, int64_t limit) const;
  int WriteStatements(const WriteBatch& batch) const;
  // The row with `id` when it is pending with epoch `epoch` + 1.
  Row* Delivered(const std::string& id, int64_t epoch);
  // Kills `row` at `now` with `reason`.
  void Kill(Row& row, int64_t now, const std::string& reason) const;
  // The last_error a reason leaves (unchanged for "" or no column).
  std::optional<std::string> LastError(const Row& row,
                                       const std::string& reason) const;
  NackCount ApplyNacks(const NackGroup& group, int64_t now);
  int64_t ApplyExtend(const ExtendGroup& group);
  int64_t ApplyRedrive(const RedriveGroup& group, int64_t now);

  Schema schema_;
  std::map<std::string, Row> rows_;
  std::map<Op, std::deque<absl::Status>> fail_next_;
  std::map<std::pair<Group, std::string>, absl::Status> poisoned_ids_;
  std::deque<absl::Status> fail_postpones_;
  absl::Status fail_all_;
  std::set<std::string> locked_;
  uint64_t commits_ = 0;
  int next_due_calls_ = 0;
  int count_dead_calls_ = 0;
  int statements_ = 0;
  std::vector<PollCall> polls_;
  std::vector<PollCall> key_polls_;
  std::vector<KeyRoom> key_rooms_;
  int in_flight_reads_ = 0;
  std::vector<PollCall> id_polls_;
  bool polls_ids_ = false;
  const Clock* db_clock_ = nullptr;
  int64_t DbNow(int64_t now) const {
    return db_clock_ != nullptr ? db_clock_->NowNanos() : now;
  }
  std::vector<WriteCall> writes_;
  std::vector<PurgeCall> purges_;
  std::vector<PurgeCall> dead_purges_;
  std::vector<ListDeadCall> dead_lists_;
  std::vector<std::vector<std::string>> fetches_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_FAKE_MESSAGE_STORE_H_
