// FakeMessageStore::Write and its groups (fake_message_store.h).
#include <set>
#include <utility>

#include "engine/last_error_text.h"
#include "engine/queue/fake_message_store.h"

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

int64_t FakeMessageStore::ApplyRedrive(const RedriveGroup& group, int64_t now) {
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
    for (const std::string& id :
         std::set<std::string>(group.ids.begin(), group.ids.end())) {
      auto it = rows_.find(id);
      if (it != rows_.end()) redrive(it->second);
    }
  }
  return n;
}

absl::StatusOr<WriteResult> FakeMessageStore::Write(const WriteBatch& batch) {
  ++commits_;
  statements_ += WriteStatements(batch);
  const absl::Status status = Begin(Op::kWrite);
  WriteCall& call = writes_.emplace_back();
  call.batch = batch;
  call.status = status;
  if (Transient(status)) return status;
  WriteResult result;
  absl::Status postpones = status;
  if (postpones.ok() && !batch.postpones.empty() && !fail_postpones_.empty()) {
    postpones = fail_postpones_.front();
    fail_postpones_.pop_front();
  }
  if (!batch.postpones.empty()) result.postpones = postpones;
  // Rows another transaction holds: what names them is left out.
  std::set<std::string> locked;
  auto is_locked = [&](const std::string& id) {
    if (!locked_.contains(id)) return false;
    locked.insert(id);
    return true;
  };
  const absl::Status locked_out = absl::AbortedError("row locked");
  if (postpones.ok()) {
    for (const Postponement& p : batch.postpones) {
      if (is_locked(p.id)) continue;
      auto it = rows_.find(p.id);
      if (it == rows_.end() || !Pending(it->second)) continue;
      it->second.time_next = p.time_next;
      it->second.epoch += 1;
    }
  }
  // The group's injected failure (or the call's), else OK.
  auto failure = [&](Group kind, const std::vector<std::string>& ids) {
    if (!status.ok()) return status;
    if (kind != Group::kAck) {
      bool any = false;
      for (const std::string& id : ids) any |= is_locked(id);
      if (any) return locked_out;
    }
    return GroupFailure(kind, ids);
  };
  for (const std::vector<std::string>& group : batch.ack_groups) {
    if (absl::Status s = failure(Group::kAck, group); !s.ok()) {
      result.acks.push_back(s);
      continue;
    }
    // `WHERE id IN (...)`: a repeated id matches its row once.
    int64_t n = 0;
    for (const std::string& id :
         std::set<std::string>(group.begin(), group.end())) {
      if (is_locked(id)) continue;
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
  result.locked.assign(locked.begin(), locked.end());
  call.result = result;
  return result;
}

}  // namespace msgq
