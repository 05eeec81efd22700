// MysqlMessageStore's write statements: a WriteBatch's postpones, acks,
// nacks, extends and the rest cut into units of IN-list statements, and a
// round's acks merged into shared statements (mysql_message_store.h). The
// transaction that runs them is in mysql_message_store_write.cc.
#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

// The ids of a batch's postpones by their new time_next: one statement
// (or more, by size) a time.
std::map<int64_t, std::vector<std::string>> PostponedIdsByTime(
    const std::vector<Postponement>& postpones) {
  std::map<int64_t, std::vector<std::string>> by_time;
  for (const Postponement& p : postpones) by_time[p.time_next].push_back(p.id);
  return by_time;
}

// A nack group's ids by (epoch, time_next): one statement set a key.
std::map<std::pair<int64_t, std::optional<int64_t>>, std::vector<std::string>>
NackedIdsByKey(const NackGroup& group) {
  std::map<std::pair<int64_t, std::optional<int64_t>>, std::vector<std::string>>
      by_key;
  for (const Nack& n : group.nacks) {
    by_key[{n.epoch, n.time_next}].push_back(n.id);
  }
  return by_key;
}

// An extend group's ids by the epoch they were sent with.
std::map<int64_t, std::vector<std::string>> ExtendedIdsByEpoch(
    const ExtendGroup& group) {
  std::map<int64_t, std::vector<std::string>> by_epoch;
  for (const auto& [id, epoch] : group.deliveries) {
    by_epoch[epoch].push_back(id);
  }
  return by_epoch;
}

// The ids a nack or extend group names.
std::vector<std::string> IdsOf(const NackGroup& group) {
  std::vector<std::string> ids;
  for (const Nack& n : group.nacks) ids.push_back(n.id);
  return ids;
}
std::vector<std::string> IdsOf(const ExtendGroup& group) {
  std::vector<std::string> ids;
  for (const auto& [id, epoch] : group.deliveries) ids.push_back(id);
  return ids;
}

// The status of a group left out because a row it names is locked.
absl::Status LockedOut() {
  return absl::AbortedError(
      "a row it names is locked by another transaction (e.g. SELECT ... FOR "
      "UPDATE): retry");
}

}  // namespace

absl::Status MysqlMessageStore::AppendInList(
    const InList& in, const std::vector<std::string>& ids, size_t limit,
    WriteUnit& unit) {
  absl::StatusOr<std::vector<std::string>> st = InListStatements(
      in.prefix, in.suffix, ids, /*skip_bad_ids=*/false, limit);
  if (!st.ok()) return st.status();
  for (std::string& sql : *st) {
    unit.statements.push_back({std::move(sql), in.counts_dead});
  }
  return absl::OkStatus();
}

InList MysqlMessageStore::AckInList(int64_t now) const {
  return {absl::StrCat("UPDATE ", settle_target_, " SET `time_acked` = ", now,
                       ", `time_next` = NULL WHERE `id` IN ("),
          ") AND `time_acked` IS NULL AND `time_next` IS NOT NULL"};
}

std::vector<MysqlMessageStore::WriteUnit> MysqlMessageStore::BuildUnits(
    const WriteBatch& batch, size_t limit, const IdSet& locked,
    bool all_locked_out, WriteResult* result) {
  std::vector<WriteUnit> units;
  auto unlocked = [&](const std::vector<std::string>& ids) {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (const std::string& id : ids) {
      if (!locked.contains(id)) out.push_back(id);
    }
    return out;
  };
  auto names_locked = [&](const std::vector<std::string>& ids) {
    return std::any_of(ids.begin(), ids.end(), [&](const std::string& id) {
      return locked.contains(id);
    });
  };
  // A group's unit, or its error; a group with no statements counts 0.
  auto finish = [&](WriteUnit unit, absl::Status status, auto& slot) {
    if (!status.ok()) {
      slot = std::move(status);
    } else if (!unit.statements.empty()) {
      units.push_back(std::move(unit));
    }
  };
  if (!batch.postpones.empty()) {
    WriteUnit unit;
    unit.kind = UnitKind::kPostpones;
    for (const auto& [time_next, ids] : PostponedIdsByTime(batch.postpones)) {
      absl::StatusOr<std::vector<std::string>> st = InListStatements(
          absl::StrCat("UPDATE ", settle_target_,
                       " SET `time_next` = ", time_next,
                       ", `epoch` = IFNULL(`epoch`, 0) + 1 WHERE `id` IN ("),
          ") AND `time_acked` IS NULL AND `time_next` IS NOT NULL",
          unlocked(ids), /*skip_bad_ids=*/true, limit);
      if (!st.ok()) {
        result->postpones = st.status();
        unit.statements.clear();
        break;
      }
      for (std::string& sql : *st) unit.statements.push_back({std::move(sql)});
    }
    if (!unit.statements.empty()) units.push_back(std::move(unit));
  }
  const InList ack = AckInList(batch.now);
  const size_t first_ack = units.size();
  std::vector<std::vector<std::string>> acks;
  acks.reserve(batch.ack_groups.size());
  for (size_t i = 0; i < batch.ack_groups.size(); ++i) {
    acks.push_back(unlocked(batch.ack_groups[i]));
    WriteUnit unit{UnitKind::kAck, i};
    absl::Status s = AppendInList(ack, acks.back(), limit, unit);
    finish(std::move(unit), std::move(s), result->acks[i]);
  }
  MergeAcks(acks, batch.now, first_ack, limit, units);
  for (size_t i = 0; i < batch.nack_groups.size(); ++i) {
    const NackGroup& group = batch.nack_groups[i];
    if (!locked.empty() && names_locked(IdsOf(group))) {
      result->nacks[i] = LockedOut();
      continue;
    }
    WriteUnit unit{UnitKind::kNack, i};
    absl::Status s;
    for (const auto& [key, ids] : NackedIdsByKey(group)) {
      for (const InList& in :
           failure_sql_.Nack(batch.now, key.first, key.second, group.reason)) {
        if (s.ok()) s = AppendInList(in, ids, limit, unit);
      }
    }
    finish(std::move(unit), std::move(s), result->nacks[i]);
  }
  for (size_t i = 0; i < batch.extend_groups.size(); ++i) {
    const ExtendGroup& group = batch.extend_groups[i];
    if (!locked.empty() && names_locked(IdsOf(group))) {
      result->extends[i] = LockedOut();
      continue;
    }
    WriteUnit unit{UnitKind::kExtend, i};
    absl::Status s;
    for (const auto& [epoch, ids] : ExtendedIdsByEpoch(group)) {
      if (s.ok()) {
        s = AppendInList(failure_sql_.Extend(epoch, group.time_next), ids,
                         limit, unit);
      }
    }
    finish(std::move(unit), std::move(s), result->extends[i]);
  }
  for (size_t i = 0; i < batch.redrive_groups.size(); ++i) {
    const RedriveGroup& group = batch.redrive_groups[i];
    if ((group.all && all_locked_out) || names_locked(group.ids)) {
      result->redrives[i] = LockedOut();
      continue;
    }
    WriteUnit unit{UnitKind::kRedrive, i};
    absl::Status s;
    if (group.all) {
      unit.statements.push_back({failure_sql_.RedriveAll(batch.now)});
    } else {
      s = AppendInList(failure_sql_.Redrive(batch.now), group.ids, limit, unit);
    }
    finish(std::move(unit), std::move(s), result->redrives[i]);
  }
  return units;
}

void MysqlMessageStore::MergeAcks(
    const std::vector<std::vector<std::string>>& acks, int64_t now,
    size_t first, size_t limit, std::vector<WriteUnit>& units) {
  if (units.size() - first < 2) return;
  WriteUnit merged{UnitKind::kAcks};
  absl::flat_hash_set<absl::string_view> seen;
  std::vector<std::string> ids;
  for (size_t u = first; u < units.size(); ++u) {
    units[u].distinct = 0;
    for (const std::string& id : acks[units[u].group]) {
      if (!seen.insert(id).second) continue;
      ids.push_back(id);
      ++units[u].distinct;
    }
    merged.members.push_back(u);
  }
  const InList ack = AckInList(now);
  for (size_t at = 0; at < ids.size(); at += kMergedAckIds) {
    const auto from = ids.begin() + static_cast<ptrdiff_t>(at);
    const auto to = ids.begin() + static_cast<ptrdiff_t>(
                                      std::min(ids.size(), at + kMergedAckIds));
    const std::vector<std::string> chunk(std::make_move_iterator(from),
                                         std::make_move_iterator(to));
    // Every member's ids were written once already: this cannot fail.
    if (!AppendInList(ack, chunk, limit, merged).ok()) return;
  }
  units.push_back(std::move(merged));
}

}  // namespace msgq
