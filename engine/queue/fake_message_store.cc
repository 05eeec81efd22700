#include "engine/queue/fake_message_store.h"

#include <algorithm>
#include <memory>

#include "absl/strings/numbers.h"

namespace msgq {
namespace {

bool Pending(const FakeMessageStore::Row& row) {
  return !row.time_acked.has_value() && row.time_next.has_value();
}

bool Dead(const FakeMessageStore::Row& row) {
  return !row.time_acked.has_value() && !row.time_next.has_value();
}

}  // namespace

FakeMessageStore::Schema FakeMessageStore::SchemaOf(const MessageTable& table) {
  Schema s;
  s.has_time_created = table.has_time_created;
  s.has_time_dead = table.has_time_dead;
  s.last_error_chars = table.last_error_chars;
  s.max_attempts = table.settings.max_attempts;
  s.max_age = table.settings.max_age;
  return s;
}

// ---- Rows --------------------------------------------------------------

void FakeMessageStore::Put(Row row) {
  ++commits_;
  std::string id = row.id;
  rows_[std::move(id)] = std::move(row);
}

void FakeMessageStore::PutDue(absl::string_view id, int64_t time_next,
                              int64_t priority, int64_t epoch) {
  Row row;
  row.id = std::string(id);
  row.priority = priority;
  row.time_next = time_next;
  row.epoch = epoch;
  row.payload = "payload-" + std::string(id);
  Put(std::move(row));
}

void FakeMessageStore::PutAcked(absl::string_view id, int64_t time_acked) {
  Row row;
  row.id = std::string(id);
  row.time_next = std::nullopt;
  row.time_acked = time_acked;
  row.epoch = 1;
  Put(std::move(row));
}

void FakeMessageStore::PutDead(absl::string_view id, int64_t epoch,
                               int64_t time_dead,
                               absl::string_view last_error) {
  Row row;
  row.id = std::string(id);
  row.time_next = std::nullopt;
  row.epoch = epoch;
  row.payload = "payload-" + std::string(id);
  if (schema_.has_time_dead) row.time_dead = time_dead;
  if (schema_.last_error_chars > 0 && !last_error.empty()) {
    row.last_error = std::string(last_error);
  }
  Put(std::move(row));
}

const FakeMessageStore::Row* FakeMessageStore::Find(
    absl::string_view id) const {
  auto it = rows_.find(std::string(id));
  return it == rows_.end() ? nullptr : &it->second;
}

std::vector<std::string> FakeMessageStore::ids() const {
  std::vector<std::string> out;
  for (const auto& [id, row] : rows_) out.push_back(id);
  return out;
}

// ---- Failure injection -------------------------------------------------

void FakeMessageStore::FailNext(Op op, absl::Status status, int times) {
  for (int i = 0; i < times; ++i) fail_next_[op].push_back(status);
}

void FakeMessageStore::FailGroupsWith(Group kind, absl::string_view id,
                                      absl::Status status) {
  poisoned_ids_[{kind, std::string(id)}] = std::move(status);
}

void FakeMessageStore::FailPostponesNext(absl::Status status, int times) {
  for (int i = 0; i < times; ++i) fail_postpones_.push_back(status);
}

void FakeMessageStore::Recover() {
  fail_all_ = absl::OkStatus();
  fail_next_.clear();
  poisoned_ids_.clear();
  fail_postpones_.clear();
}

absl::Status FakeMessageStore::Begin(Op op) {
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

absl::Status FakeMessageStore::GroupFailure(
    Group kind, const std::vector<std::string>& ids) const {
  for (const std::string& id : ids) {
    auto p = poisoned_ids_.find({kind, id});
    if (p != poisoned_ids_.end()) return p->second;
  }
  return absl::OkStatus();
}

// ---- Reads -------------------------------------------------------------

absl::StatusOr<std::vector<Message>> FakeMessageStore::PollDue(int64_t now,
                                                               int64_t limit) {
  PollCall& call = StartPoll(Op::kPollDue, polls_, now, limit);
  if (!call.status.ok()) return call.status;
  std::vector<Message> out;
  for (const Row* row : Due(DbNow(now), limit)) {
    call.ids.push_back(row->id);
    out.push_back(ToMessage(*row));
  }
  return out;
}

absl::StatusOr<std::vector<Message>> FakeMessageStore::PollDueByKey(
    int64_t now, int64_t limit, const KeyRoom& room) {
  PollCall& call = StartPoll(Op::kPollDue, key_polls_, now, limit);
  key_rooms_.push_back(room);
  if (!call.status.ok()) return call.status;
  std::map<std::string, int64_t> taken;  // by FairKeyTag
  std::vector<Message> out;
  for (const Row* row : Due(DbNow(now), -1)) {
    if (static_cast<int64_t>(out.size()) >= limit) break;
    int64_t& n = taken[FairKeyTag(row->key)];
    if (n >= room.For(row->key)) continue;
    ++n;
    call.ids.push_back(row->id);
    out.push_back(ToMessage(*row));
  }
  return out;
}

absl::StatusOr<std::vector<InFlightRow>> FakeMessageStore::ReadInFlight(
    int64_t now) {
  ++statements_;
  ++in_flight_reads_;
  if (absl::Status s = Begin(Op::kPollDue); !s.ok()) return s;
  std::vector<InFlightRow> out;
  for (const auto& [id, row] : rows_) {
    if (!Pending(row) || !row.key.has_value() || row.epoch <= 0 ||
        *row.time_next <= DbNow(now)) {
      continue;
    }
    out.push_back(InFlightRow{row.key, row.id, row.epoch, *row.time_next});
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> FakeMessageStore::PollDueIds(
    int64_t now, int64_t limit) {
  if (!polls_ids_) return absl::UnimplementedError("polling ids");
  PollCall& call = StartPoll(Op::kPollDueIds, id_polls_, now, limit);
  if (!call.status.ok()) return call.status;
  for (const Row* row : Due(DbNow(now), limit)) call.ids.push_back(row->id);
  return call.ids;
}

FakeMessageStore::PollCall& FakeMessageStore::StartPoll(
    Op op, std::vector<PollCall>& calls, int64_t now, int64_t limit) {
  ++statements_;
  const absl::Status status = Begin(op);
  PollCall& call = calls.emplace_back();
  call.now = now;
  call.limit = limit;
  call.status = status;
  return call;
}

std::vector<const FakeMessageStore::Row*> FakeMessageStore::Due(
    int64_t now, int64_t limit) const {
  std::vector<const Row*> due;
  for (const auto& [id, row] : rows_) {
    if (Pending(row) && *row.time_next <= now) due.push_back(&row);
  }
  std::sort(due.begin(), due.end(), [](const Row* a, const Row* b) {
    if (a->priority != b->priority) return a->priority < b->priority;
    if (*a->time_next != *b->time_next) return *a->time_next < *b->time_next;
    return IdLess(a->id, b->id);
  });
  if (limit >= 0 && due.size() > static_cast<size_t>(limit)) {
    due.resize(static_cast<size_t>(limit));
  }
  return due;
}

absl::StatusOr<std::vector<Message>> FakeMessageStore::FetchDue(
    const std::vector<std::string>& ids, int64_t now) {
  ++statements_;
  fetches_.push_back(ids);
  if (absl::Status s = Begin(Op::kFetchDue); !s.ok()) return s;
  std::vector<Message> out;
  for (const std::string& id : ids) {
    auto it = rows_.find(id);
    if (it == rows_.end()) continue;
    if (Pending(it->second) && *it->second.time_next <= DbNow(now)) {
      out.push_back(ToMessage(it->second));
    }
  }
  return out;
}

absl::StatusOr<std::optional<int64_t>> FakeMessageStore::NextDueAfter(
    int64_t now) {
  ++statements_;
  ++next_due_calls_;
  if (absl::Status s = Begin(Op::kNextDueAfter); !s.ok()) return s;
  std::optional<int64_t> earliest;
  for (const auto& [id, row] : rows_) {
    if (!Pending(row) || *row.time_next <= DbNow(now)) continue;
    if (!earliest.has_value() || *row.time_next < *earliest) {
      earliest = *row.time_next;
    }
  }
  return earliest;
}

Message FakeMessageStore::ToMessage(const Row& row) const {
  Message m;
  m.id = row.id;
  m.priority = row.priority;
  m.time_next = *row.time_next;
  m.epoch = row.epoch;
  m.fair_key = row.key;
  if (schema_.has_time_created) m.time_created = row.time_created.value_or(0);
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

bool FakeMessageStore::IdLess(const std::string& a, const std::string& b) {
  int64_t x = 0;
  int64_t y = 0;
  if (absl::SimpleAtoi(a, &x) && absl::SimpleAtoi(b, &y) && x != y) {
    return x < y;
  }
  return a < b;
}

// ---- Purges and dead rows ----------------------------------------------

absl::StatusOr<int64_t> FakeMessageStore::Purge(int64_t cutoff, int limit) {
  ++statements_;
  const absl::Status status = Begin(Op::kPurge);
  PurgeCall& call = purges_.emplace_back();
  call.cutoff = cutoff;
  call.limit = limit;
  call.status = status;
  if (!status.ok()) return status;
  int64_t deleted = 0;
  for (auto it = rows_.begin(); it != rows_.end() && deleted < limit;) {
    if (it->second.time_acked.has_value() && *it->second.time_acked < cutoff) {
      it = rows_.erase(it);
      ++deleted;
    } else {
      ++it;
    }
  }
  call.deleted = deleted;
  return deleted;
}

absl::StatusOr<int64_t> FakeMessageStore::PurgeDead(int64_t cutoff, int limit) {
  ++statements_;
  absl::Status status = Begin(Op::kPurgeDead);
  if (status.ok() && !schema_.has_time_dead) {
    status =
        absl::FailedPreconditionError("PurgeDead needs a time_dead column");
  }
  PurgeCall& call = dead_purges_.emplace_back();
  call.cutoff = cutoff;
  call.limit = limit;
  call.status = status;
  if (!status.ok()) return status;
  int64_t deleted = 0;
  for (auto it = rows_.begin(); it != rows_.end() && deleted < limit;) {
    const Row& row = it->second;
    if (Dead(row) && row.time_dead.has_value() && *row.time_dead < cutoff) {
      it = rows_.erase(it);
      ++deleted;
    } else {
      ++it;
    }
  }
  call.deleted = deleted;
  return deleted;
}

absl::StatusOr<int64_t> FakeMessageStore::CountDead() {
  ++statements_;
  ++count_dead_calls_;
  if (absl::Status s = Begin(Op::kCountDead); !s.ok()) return s;
  return static_cast<int64_t>(
      std::count_if(rows_.begin(), rows_.end(),
                    [](const auto& r) { return Dead(r.second); }));
}

absl::StatusOr<std::vector<DeadRow>> FakeMessageStore::ListDead(
    const std::string& after_id, int limit) {
  ++statements_;
  const absl::Status status = Begin(Op::kListDead);
  ListDeadCall& call = dead_lists_.emplace_back();
  call.after_id = after_id;
  call.limit = limit;
  call.status = status;
  if (!status.ok()) return status;
  std::vector<const Row*> dead;
  for (const auto& [id, row] : rows_) {
    if (Dead(row) && (after_id.empty() || IdLess(after_id, id))) {
      dead.push_back(&row);
    }
  }
  std::sort(dead.begin(), dead.end(),
            [](const Row* a, const Row* b) { return IdLess(a->id, b->id); });
  if (dead.size() > static_cast<size_t>(std::max(limit, 0))) {
    dead.resize(static_cast<size_t>(std::max(limit, 0)));
  }
  std::vector<DeadRow> out;
  for (const Row* row : dead) {
    DeadRow& d = out.emplace_back();
    d.id = row->id;
    d.epoch = row->epoch;
    if (schema_.last_error_chars > 0)
      d.last_error = row->last_error.value_or("");
    if (schema_.has_time_dead) d.time_dead = row->time_dead.value_or(0);
    if (schema_.has_time_created) {
      d.time_created = row->time_created.value_or(0);
    }
    call.ids.push_back(row->id);
  }
  return out;
}

}  // namespace msgq
