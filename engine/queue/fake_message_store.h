// FakeMessageStore: an in-memory MessageStore for unit tests (test-only,
// header-only).
//
// It holds the rows of one message table whose streamed columns are `id` and
// `payload`, and applies the same semantics as the SQL of MysqlMessageStore:
// PollDue returns unacked rows with time_next <= now ordered by priority,
// time_next, id (ids compare as numbers when both are integers, as MySQL
// orders an integer id column; otherwise bytewise); Write postpones and acks
// only rows still unacked, with the failure units of MessageStore::Write (the
// postpones, each ack group); Purge deletes rows acked before the cutoff.
//
// Every call is counted and recorded (the WriteBatch of each Write, the
// arguments and result of each poll and purge), so tests can assert "one
// Write per round, with these ids". A call can be made to fail with a given
// status (FailNext for the next N calls of one kind, FailAll for an outage
// until Recover); a failed call is counted and recorded but changes nothing.
// A Write failed so with a permanent code (not UNAVAILABLE or ABORTED) is
// reported as the store contract says: every unit failed with that status.
// One unit can be made to fail permanently on its own: FailAckGroupsWith(id)
// for every ack group holding `id`, FailPostponesNext for the postpones.
// `before_call` runs at the start of every call, to simulate events that
// happen while a statement is in flight.
//
// Not thread-safe: the unit tests drive MessageManager::RunOnce() from one
// thread, which is the only user of the store.
#ifndef MSGQ_ENGINE_QUEUE_FAKE_MESSAGE_STORE_H_
#define MSGQ_ENGINE_QUEUE_FAKE_MESSAGE_STORE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
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
  };

  enum class Op { kPollDue, kFetchDue, kNextDueAfter, kWrite, kPurge };

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
  struct PurgeCall {
    int64_t cutoff = 0;
    int limit = 0;
    int64_t deleted = 0;
    absl::Status status;
  };

  // ---- Setting up rows -------------------------------------------------

  // Inserts or replaces the row with `row.id`.
  void Put(Row row) {
    std::string id = row.id;
    rows_[std::move(id)] = std::move(row);
  }
  // An unacked row due at `time_next` with payload "payload-<id>".
  void PutDue(absl::string_view id, int64_t time_next, int64_t priority = 0,
              int64_t epoch = 0) {
    Row row;
    row.id = std::string(id);
    row.priority = priority;
    row.time_next = time_next;
    row.epoch = epoch;
    row.payload = "payload-" + std::string(id);
    Put(std::move(row));
  }
  // A row acked at `time_acked` (time_next NULL, as an ack leaves it).
  void PutAcked(absl::string_view id, int64_t time_acked) {
    Row row;
    row.id = std::string(id);
    row.time_next = std::nullopt;
    row.time_acked = time_acked;
    row.epoch = 1;
    Put(std::move(row));
  }
  void Erase(absl::string_view id) { rows_.erase(std::string(id)); }

  // The row with `id`, or nullptr.
  const Row* Find(absl::string_view id) const {
    auto it = rows_.find(std::string(id));
    return it == rows_.end() ? nullptr : &it->second;
  }
  size_t size() const { return rows_.size(); }
  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& [id, row] : rows_) out.push_back(id);
    return out;
  }

  // ---- Failure injection -----------------------------------------------

  // The next `times` calls of `op` fail with `status`.
  void FailNext(Op op, absl::Status status, int times = 1) {
    for (int i = 0; i < times; ++i) fail_next_[op].push_back(status);
  }
  // Every ack group holding `id` fails with `status` (a permanent code)
  // until Recover(); the other units of the Write still apply.
  void FailAckGroupsWith(absl::string_view id, absl::Status status) {
    poisoned_ids_[std::string(id)] = std::move(status);
  }
  // The postpones of the next `times` Writes fail with `status` (permanent)
  // and are not applied; the ack groups still apply.
  void FailPostponesNext(absl::Status status, int times = 1) {
    for (int i = 0; i < times; ++i) fail_postpones_.push_back(status);
  }
  // Every call fails with `status` until Recover() (a MySQL outage).
  void FailAll(absl::Status status) { fail_all_ = std::move(status); }
  void Recover() {
    fail_all_ = absl::OkStatus();
    fail_next_.clear();
    poisoned_ids_.clear();
    fail_postpones_.clear();
  }

  // Runs at the start of every call, before failure injection and before
  // the call is recorded. Must not call the store.
  std::function<void(Op)> before_call;

  // ---- What the manager did --------------------------------------------

  int poll_calls() const { return static_cast<int>(polls_.size()); }
  int next_due_calls() const { return next_due_calls_; }
  int write_calls() const { return static_cast<int>(writes_.size()); }
  int purge_calls() const { return static_cast<int>(purges_.size()); }
  // SQL statements issued: one per poll, next-due query and purge; per Write
  // one per distinct postpone time_next plus one per ack group.
  int statements() const { return statements_; }

  const std::vector<PollCall>& polls() const { return polls_; }
  const std::vector<WriteCall>& writes() const { return writes_; }
  const std::vector<PurgeCall>& purges() const { return purges_; }

  // ---- MessageStore ------------------------------------------------------

  absl::StatusOr<std::vector<Message>> PollDue(int64_t now,
                                               int64_t limit) override {
    ++statements_;
    const absl::Status status = Begin(Op::kPollDue);
    PollCall& call = polls_.emplace_back();
    call.now = now;
    call.limit = limit;
    call.status = status;
    if (!status.ok()) return status;
    std::vector<const Row*> due;
    for (const auto& [id, row] : rows_) {
      if (!row.time_acked.has_value() && row.time_next.has_value() &&
          *row.time_next <= now) {
        due.push_back(&row);
      }
    }
    std::sort(due.begin(), due.end(), [](const Row* a, const Row* b) {
      if (a->priority != b->priority) return a->priority < b->priority;
      if (*a->time_next != *b->time_next) return *a->time_next < *b->time_next;
      return IdLess(a->id, b->id);
    });
    if (limit >= 0 && due.size() > static_cast<size_t>(limit)) {
      due.resize(static_cast<size_t>(limit));
    }
    std::vector<Message> out;
    out.reserve(due.size());
    for (const Row* row : due) {
      call.ids.push_back(row->id);
      out.push_back(ToMessage(*row));
    }
    return out;
  }

  absl::StatusOr<std::vector<Message>> FetchDue(
      const std::vector<std::string>& ids, int64_t now) override {
    ++statements_;
    fetches_.push_back(ids);
    if (absl::Status s = Begin(Op::kFetchDue); !s.ok()) return s;
    std::vector<const Row*> due;
    for (const std::string& id : ids) {
      auto it = rows_.find(id);
      if (it == rows_.end()) continue;
      const Row& row = it->second;
      if (!row.time_acked.has_value() && row.time_next.has_value() &&
          *row.time_next <= now) {
        due.push_back(&row);
      }
    }
    std::vector<Message> out;
    for (const Row* row : due) out.push_back(ToMessage(*row));
    return out;
  }
  // The id lists FetchDue was called with.
  const std::vector<std::vector<std::string>>& fetches() const {
    return fetches_;
  }

  absl::StatusOr<std::optional<int64_t>> NextDueAfter(int64_t now) override {
    ++statements_;
    ++next_due_calls_;
    if (absl::Status s = Begin(Op::kNextDueAfter); !s.ok()) return s;
    std::optional<int64_t> earliest;
    for (const auto& [id, row] : rows_) {
      if (row.time_acked.has_value() || !row.time_next.has_value()) continue;
      if (*row.time_next <= now) continue;
      if (!earliest.has_value() || *row.time_next < *earliest) {
        earliest = *row.time_next;
      }
    }
    return earliest;
  }

  absl::StatusOr<WriteResult> Write(const WriteBatch& batch) override {
    std::set<int64_t> distinct_times;
    for (const Postponement& p : batch.postpones) {
      distinct_times.insert(p.time_next);
    }
    statements_ +=
        static_cast<int>(distinct_times.size() + batch.ack_groups.size());
    const absl::Status status = Begin(Op::kWrite);
    WriteCall& call = writes_.emplace_back();
    call.batch = batch;
    call.status = status;
    const bool transient = status.code() == absl::StatusCode::kUnavailable ||
                           status.code() == absl::StatusCode::kAborted;
    if (transient) return status;
    WriteResult result;
    result.acks.assign(batch.ack_groups.size(), int64_t{0});
    absl::Status postpones = status;
    if (postpones.ok() && !batch.postpones.empty() &&
        !fail_postpones_.empty()) {
      postpones = fail_postpones_.front();
      fail_postpones_.pop_front();
    }
    if (!batch.postpones.empty()) result.postpones = postpones;
    if (postpones.ok()) {
      for (const Postponement& p : batch.postpones) {
        auto it = rows_.find(p.id);
        if (it == rows_.end() || it->second.time_acked.has_value()) continue;
        it->second.time_next = p.time_next;
        it->second.epoch += 1;
      }
    }
    for (size_t i = 0; i < batch.ack_groups.size(); ++i) {
      // `WHERE id IN (...)`: a repeated id matches its row once.
      const std::set<std::string> ids(batch.ack_groups[i].begin(),
                                      batch.ack_groups[i].end());
      absl::Status group = status;
      for (const std::string& id : ids) {
        auto p = poisoned_ids_.find(id);
        if (group.ok() && p != poisoned_ids_.end()) group = p->second;
      }
      if (!group.ok()) {
        result.acks[i] = group;
        continue;
      }
      int64_t n = 0;
      for (const std::string& id : ids) {
        auto it = rows_.find(id);
        if (it == rows_.end() || it->second.time_acked.has_value()) continue;
        it->second.time_acked = batch.now;
        it->second.time_next = std::nullopt;
        ++n;
      }
      result.acks[i] = n;
    }
    call.result = result;
    return result;
  }

  absl::StatusOr<int64_t> PurgeDead(int64_t, int) override {
    return absl::UnimplementedError("PurgeDead: not yet");
  }
  absl::StatusOr<int64_t> CountDead() override {
    return absl::UnimplementedError("CountDead: not yet");
  }
  absl::StatusOr<std::vector<DeadRow>> ListDead(const std::string&,
                                                int) override {
    return absl::UnimplementedError("ListDead: not yet");
  }

  absl::StatusOr<int64_t> Purge(int64_t cutoff, int limit) override {
    ++statements_;
    const absl::Status status = Begin(Op::kPurge);
    PurgeCall& call = purges_.emplace_back();
    call.cutoff = cutoff;
    call.limit = limit;
    call.status = status;
    if (!status.ok()) return status;
    int64_t deleted = 0;
    for (auto it = rows_.begin(); it != rows_.end() && deleted < limit;) {
      if (it->second.time_acked.has_value() &&
          *it->second.time_acked < cutoff) {
        it = rows_.erase(it);
        ++deleted;
      } else {
        ++it;
      }
    }
    call.deleted = deleted;
    return deleted;
  }

  // Orders ids as MySQL orders the id column: numerically when both are
  // integers, bytewise otherwise.
  static bool IdLess(const std::string& a, const std::string& b) {
    int64_t x = 0;
    int64_t y = 0;
    if (absl::SimpleAtoi(a, &x) && absl::SimpleAtoi(b, &y) && x != y) {
      return x < y;
    }
    return a < b;
  }

 private:
  // Runs the hook and returns the injected failure for `op`, if any.
  absl::Status Begin(Op op) {
    if (before_call) before_call(op);
    if (!fail_all_.ok()) return fail_all_;
    auto it = fail_next_.find(op);
    if (it != fail_next_.end() && !it->second.empty()) {
      absl::Status s = it->second.front();
      it->second.pop_front();
      return s;
    }
    return absl::OkStatus();
  }

  static Message ToMessage(const Row& row) {
    Message m;
    m.id = row.id;
    m.priority = row.priority;
    m.time_next = *row.time_next;
    m.epoch = row.epoch;
    auto packed = std::make_shared<PackedRow>();
    packed->lengths.push_back(static_cast<int64_t>(row.id.size()));
    packed->values = row.id;
    if (row.payload.has_value()) {
      packed->lengths.push_back(static_cast<int64_t>(row.payload->size()));
      packed->values += *row.payload;
    } else {
      packed->lengths.push_back(-1);
    }
    m.row = std::move(packed);
    return m;
  }

  std::map<std::string, Row> rows_;
  std::map<Op, std::deque<absl::Status>> fail_next_;
  std::map<std::string, absl::Status> poisoned_ids_;
  std::deque<absl::Status> fail_postpones_;
  absl::Status fail_all_;
  int next_due_calls_ = 0;
  int statements_ = 0;
  std::vector<PollCall> polls_;
  std::vector<WriteCall> writes_;
  std::vector<PurgeCall> purges_;
  std::vector<std::vector<std::string>> fetches_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_FAKE_MESSAGE_STORE_H_
