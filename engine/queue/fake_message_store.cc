#include "engine/queue/fake_message_store.h"

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/numbers.h"
#include "engine/sql/failure_statements.h"

namespace msgq {
namespace {

bool Pending(const FakeMessageStore::Row& row) {
  return !row.time_acked.has_value() && row.time_next.has_value();
}

bool Dead(const FakeMessageStore::Row& row) {
  return !row.time_acked.has_value() && !row.time_next.has_value();
}

bool Transient(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kAborted;
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
  ++statements_;
  const absl::Status status = Begin(Op::kPollDue);
  PollCall& call = polls_.emplace_back();
  call.now = now;
  call.limit = limit;
  call.status = status;
  if (!status.ok()) return status;
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
  std::vector<Message> out;
  out.reserve(due.size());
  for (const Row* row : due) {
    call.ids.push_back(row->id);
    out.push_back(ToMessage(*row));
  }
  return out;
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
    if (Pending(it->second) && *it->second.time_next <= now) {
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
    if (!Pending(row) || *row.time_next <= now) continue;
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

// ---- Write -------------------------------------------------------------

int FakeMessageStore::WriteStatements(const WriteBatch& batch) const {
  std::set<int64_t> times;
  for (const Postponement& p : batch.postpones) times.insert(p.time_next);
  size_t n = times.size() + batch.ack_groups.size();
  const bool limited =
      schema_.max_attempts > 0 ||
      (schema_.has_time_created && schema_.max_age > absl::ZeroDuration());
  for (const NackGroup& g : batch.nack_groups) {
    std::set<std::pair<int64_t, std::optional<int64_t>>> keys;
    for (const Nack& nack : g.nacks) keys.insert({nack.epoch, nack.time_next});
    for (const auto& key : keys) n += key.second.has_value() && limited ? 2 : 1;
  }
  for (const ExtendGroup& g : batch.extend_groups) {
    std::set<int64_t> epochs;
    for (const auto& d : g.deliveries) epochs.insert(d.second);
    n += epochs.size();
  }
  for (const RedriveGroup& g : batch.redrive_groups) {
    n += g.all || !g.ids.empty() ? 1 : 0;
  }
  return static_cast<int>(n);
}

FakeMessageStore::Row* FakeMessageStore::Delivered(const std::string& id,
                                                   int64_t epoch) {
  auto it = rows_.find(id);
  if (it == rows_.end() || !Pending(it->second)) return nullptr;
  // epoch + 1 as the SQL computes it (no int64 overflow there either).
  if (epoch == INT64_MAX || it->second.epoch != epoch + 1) return nullptr;
  return &it->second;
}

std::optional<std::string> FakeMessageStore::LastError(
    const Row& row, const std::string& reason) const {
  if (schema_.last_error_chars <= 0 || reason.empty()) return row.last_error;
  return LastErrorText(reason, schema_.last_error_chars);
}

void FakeMessageStore::Kill(Row& row, int64_t now,
                            const std::string& reason) const {
  row.time_next = std::nullopt;
  if (schema_.has_time_dead) row.time_dead = now;
  row.last_error = LastError(row, reason);
}

NackCount FakeMessageStore::ApplyNacks(const NackGroup& group, int64_t now) {
  // The SQL's statements: one per (epoch, time_next), ids deduplicated.
  std::map<std::pair<int64_t, std::optional<int64_t>>, std::set<std::string>>
      by_key;
  for (const Nack& n : group.nacks) by_key[{n.epoch, n.time_next}].insert(n.id);
  const int64_t max_age_ns = absl::ToInt64Nanoseconds(schema_.max_age);
  NackCount count;
  for (const auto& [key, ids] : by_key) {
    for (const std::string& id : ids) {
      Row* row = Delivered(id, key.first);
      if (row == nullptr) continue;
      const bool too_old = schema_.has_time_created && max_age_ns > 0 &&
                           row->time_created.has_value() &&
                           *row->time_created < now - max_age_ns;
      const bool too_many =
          schema_.max_attempts > 0 && row->epoch >= schema_.max_attempts;
      if (!key.second.has_value() || too_old || too_many) {
        Kill(*row, now, group.reason);
        ++count.dead;
        continue;
      }
      std::optional<std::string> error = LastError(*row, group.reason);
      if (row->time_next == key.second && row->last_error == error) continue;
      row->time_next = key.second;
      row->last_error = std::move(error);
      ++count.retried;
    }
  }
  return count;
}

int64_t FakeMessageStore::ApplyExtend(const ExtendGroup& group) {
  std::set<std::pair<int64_t, std::string>> deliveries;
  for (const auto& [id, epoch] : group.deliveries) {
    deliveries.insert({epoch, id});
  }
  int64_t n = 0;
  for (const auto& [epoch, id] : deliveries) {
    Row* row = Delivered(id, epoch);
    if (row == nullptr || row->time_next == group.time_next) continue;
    row->time_next = group.time_next;
    ++n;
  }
  return n;
}

int64_t FakeMessageStore::ApplyRedrive(const RedriveGroup& group,
                                       int64_t now) {
  int64_t n = 0;
  auto redrive = [&](Row& row) {
    if (!Dead(row)) return;
    row.time_next = now;
    row.epoch = 0;
    if (schema_.has_time_dead) row.time_dead = std::nullopt;
    ++n;
  };
  if (group.all) {
    for (auto& [id, row] : rows_) redrive(row);
  } else {
    for (const std::string& id : std::set<std::string>(group.ids.begin(),
                                                       group.ids.end())) {
      auto it = rows_.find(id);
      if (it != rows_.end()) redrive(it->second);
    }
  }
  return n;
}

absl::StatusOr<WriteResult> FakeMessageStore::Write(const WriteBatch& batch) {
  statements_ += WriteStatements(batch);
  const absl::Status status = Begin(Op::kWrite);
  WriteCall& call = writes_.emplace_back();
  call.batch = batch;
  call.status = status;
  if (Transient(status)) return status;
  WriteResult result;
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
      if (it == rows_.end() || !Pending(it->second)) continue;
      it->second.time_next = p.time_next;
      it->second.epoch += 1;
    }
  }
  // The group's injected failure (or the call's), else OK.
  auto failure = [&](Group kind, const std::vector<std::string>& ids) {
    return status.ok() ? GroupFailure(kind, ids) : status;
  };
  for (const std::vector<std::string>& group : batch.ack_groups) {
    if (absl::Status s = failure(Group::kAck, group); !s.ok()) {
      result.acks.push_back(s);
      continue;
    }
    // `WHERE id IN (...)`: a repeated id matches its row once.
    int64_t n = 0;
    for (const std::string& id : std::set<std::string>(group.begin(),
                                                       group.end())) {
      auto it = rows_.find(id);
      if (it == rows_.end() || !Pending(it->second)) continue;
      it->second.time_acked = batch.now;
      it->second.time_next = std::nullopt;
      ++n;
    }
    result.acks.push_back(n);
  }
  for (const NackGroup& group : batch.nack_groups) {
    std::vector<std::string> ids;
    for (const Nack& n : group.nacks) ids.push_back(n.id);
    absl::Status s = failure(Group::kNack, ids);
    result.nacks.push_back(s.ok() ? ApplyNacks(group, batch.now)
                                  : absl::StatusOr<NackCount>(s));
  }
  for (const ExtendGroup& group : batch.extend_groups) {
    std::vector<std::string> ids;
    for (const auto& d : group.deliveries) ids.push_back(d.first);
    absl::Status s = failure(Group::kExtend, ids);
    result.extends.push_back(s.ok() ? ApplyExtend(group)
                                    : absl::StatusOr<int64_t>(s));
  }
  for (const RedriveGroup& group : batch.redrive_groups) {
    absl::Status s = failure(
        Group::kRedrive, group.all ? std::vector<std::string>{""} : group.ids);
    result.redrives.push_back(s.ok() ? ApplyRedrive(group, batch.now)
                                     : absl::StatusOr<int64_t>(s));
  }
  call.result = result;
  return result;
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

absl::StatusOr<int64_t> FakeMessageStore::PurgeDead(int64_t cutoff,
                                                    int limit) {
  ++statements_;
  absl::Status status = Begin(Op::kPurgeDead);
  if (status.ok() && !schema_.has_time_dead) {
    status = absl::FailedPreconditionError("PurgeDead needs a time_dead column");
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
  return static_cast<int64_t>(std::count_if(
      rows_.begin(), rows_.end(), [](const auto& r) { return Dead(r.second); }));
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
    if (schema_.last_error_chars > 0) d.last_error = row->last_error.value_or("");
    if (schema_.has_time_dead) d.time_dead = row->time_dead.value_or(0);
    if (schema_.has_time_created) {
      d.time_created = row->time_created.value_or(0);
    }
    call.ids.push_back(row->id);
  }
  return out;
}

}  // namespace msgq
