// MysqlMessageStore::Write: every unit of a WriteBatch in one transaction,
// a unit that fails permanently left out (mysql_message_store.h). The units
// and their statements are built in mysql_message_store_units.cc.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

// Records the outcome of `unit` in the result slot of its group (a kAcks
// unit's in each member's slot). A template only because WriteUnit is
// private to MysqlMessageStore: the type is deduced, never named.
template <typename Unit>
void Report(const std::vector<Unit>& units, const Unit& unit,
            const absl::Status& status, WriteResult& result) {
  using Kind = decltype(unit.kind);
  switch (unit.kind) {
    case Kind::kAcks:
      for (size_t m : unit.members) {
        result.acks[units[m].group] =
            status.ok() ? absl::StatusOr<int64_t>(units[m].affected) : status;
      }
      return;
    case Kind::kPostpones:
      result.postpones = status;
      return;
    case Kind::kAck:
      result.acks[unit.group] =
          status.ok() ? absl::StatusOr<int64_t>(unit.affected) : status;
      return;
    case Kind::kNack:
      result.nacks[unit.group] =
          status.ok()
              ? absl::StatusOr<NackCount>(NackCount{unit.affected, unit.dead})
              : status;
      return;
    case Kind::kExtend:
      result.extends[unit.group] =
          status.ok() ? absl::StatusOr<int64_t>(unit.affected) : status;
      return;
    case Kind::kRedrive:
      result.redrives[unit.group] =
          status.ok() ? absl::StatusOr<int64_t>(unit.affected) : status;
      return;
  }
}

// The units (by index) that Write's next transaction runs, in order. A
// kAcks unit runs in place of its members until one of its statements
// fails permanently: then it is dissolved and its members run as units of
// their own, so the failure is charged to the RPC whose acks caused it.
class LiveUnits {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  // Every unit that no other unit runs in place of.
  template <typename Unit>
  explicit LiveUnits(const std::vector<Unit>& units)
      : owner_(units.size(), kNone) {
    for (size_t u = 0; u < units.size(); ++u) {
      for (size_t m : units[u].members) owner_[m] = u;
    }
    for (size_t u = 0; u < units.size(); ++u) {
      if (owner_[u] == kNone) live_.push_back(u);
    }
  }

  const std::vector<size_t>& units() const { return live_; }
  bool empty() const { return live_.empty(); }
  // The live unit that runs `u` in its place, or kNone.
  size_t owner(size_t u) const { return owner_[u]; }
  // Puts `members` in the place of the live unit `u`.
  void Dissolve(size_t u, const std::vector<size_t>& members) {
    auto at = live_.erase(std::find(live_.begin(), live_.end(), u));
    live_.insert(at, members.begin(), members.end());
    for (size_t m : members) owner_[m] = kNone;
  }
  // Leaves the live unit `u` out.
  void Remove(size_t u) {
    live_.erase(std::find(live_.begin(), live_.end(), u));
  }

 private:
  std::vector<size_t> owner_;
  std::vector<size_t> live_;
};

}  // namespace

absl::Status MysqlMessageStore::RunUnit(MysqlConnection* conn,
                                        WriteUnit& unit) {
  unit.affected = 0;
  unit.dead = 0;
  for (const Statement& st : unit.statements) {
    absl::StatusOr<uint64_t> n = conn->Execute(st.sql);
    if (!n.ok()) return n.status();
    (st.counts_dead ? unit.dead : unit.affected) += static_cast<int64_t>(*n);
  }
  return absl::OkStatus();
}

absl::Status MysqlMessageStore::RunMergedAcks(MysqlConnection* conn,
                                              std::vector<WriteUnit>& units,
                                              size_t u, size_t* failed) {
  WriteUnit& merged = units[u];
  *failed = u;
  if (!merged.fell_back) {
    if (auto s = conn->Execute("SAVEPOINT `msgq_acks`"); !s.ok()) {
      return s.status();
    }
    if (absl::Status s = RunUnit(conn, merged); !s.ok()) return s;
    int64_t expected = 0;
    for (size_t m : merged.members) expected += units[m].distinct;
    if (merged.affected == expected) {
      for (size_t m : merged.members) units[m].affected = units[m].distinct;
      *failed = kNoUnit;
      return absl::OkStatus();
    }
    merged.fell_back = true;
    if (auto s = conn->Execute("ROLLBACK TO SAVEPOINT `msgq_acks`"); !s.ok()) {
      return s.status();
    }
  }
  for (size_t m : merged.members) {
    *failed = m;
    if (absl::Status s = RunUnit(conn, units[m]); !s.ok()) return s;
  }
  *failed = kNoUnit;
  return absl::OkStatus();
}

absl::Status MysqlMessageStore::RunTransaction(MysqlConnection* conn,
                                               std::vector<WriteUnit>& units,
                                               const std::vector<size_t>& live,
                                               size_t* failed) {
  *failed = kNoUnit;
  size_t count = 0;
  bool merged = false;
  for (size_t u : live) {
    count += units[u].statements.size();
    merged |= units[u].kind == UnitKind::kAcks;
  }
  const bool txn = count > 1 || merged;
  if (txn) {
    if (auto s = conn->Execute("BEGIN"); !s.ok()) return s.status();
  }
  for (size_t u : live) {
    *failed = u;
    absl::Status s = units[u].kind == UnitKind::kAcks
                         ? RunMergedAcks(conn, units, u, failed)
                         : RunUnit(conn, units[u]);
    if (!s.ok()) {
      if (txn && !conn->broken()) (void)conn->Execute("ROLLBACK");
      return s;
    }
  }
  *failed = kNoUnit;
  if (txn) {
    if (auto s = conn->Execute("COMMIT"); !s.ok()) return s.status();
  }
  return absl::OkStatus();
}

absl::Status MysqlMessageStore::LearnLastErrorCharset(MysqlConnection* conn,
                                                      const WriteBatch& batch) {
  if (last_error_charset_known_ || table_.last_error_chars <= 0) {
    return absl::OkStatus();
  }
  bool stores_reason = false;
  for (const NackGroup& g : batch.nack_groups) {
    stores_reason |= !g.reason.empty() && !g.nacks.empty();
  }
  if (!stores_reason) return absl::OkStatus();
  // Names from information_schema are valid UTF-8: the literals cannot fail.
  absl::StatusOr<QueryResult> r = conn->Query(absl::StrCat(
      "SELECT `CHARACTER_SET_NAME` FROM `information_schema`.`COLUMNS` WHERE "
      "`TABLE_SCHEMA` = ",
      IdLiteral(IdKind::kText, table_.keyspace).value_or("''"),
      " AND `TABLE_NAME` = ",
      IdLiteral(IdKind::kText, table_.name).value_or("''"),
      " AND `COLUMN_NAME` = 'last_error'"));
  if (!r.ok() && (msgq::IsUnavailable(r.status()) ||
                  r.status().code() == absl::StatusCode::kAborted)) {
    return Check(r.status());
  }
  if (!r.ok() || r->rows.size() != 1 || !r->rows[0][0].has_value()) {
    LogTableWarning(table_.keyspace, table_.name, log_name_,
                    ": cannot read the character set of last_error (",
                    r.ok() ? "no such column" : r.status().message(),
                    "); reasons are stored as ASCII");
    failure_sql_.set_last_error_repertoire(Repertoire::kAscii);
    return absl::OkStatus();
  }
  failure_sql_.set_last_error_repertoire(RepertoireOf(*r->rows[0][0]));
  last_error_charset_known_ = true;
  return absl::OkStatus();
}

absl::StatusOr<MysqlMessageStore::IdSet> MysqlMessageStore::ReadIds(
    MysqlConnection* conn, const std::vector<std::string>& statements) {
  IdSet ids;
  for (const std::string& sql : statements) {
    absl::Status status = conn->ForEachRow(
        sql, [&ids](char** values, unsigned long* lengths, unsigned int n) {
          if (n >= 1 && values[0] != nullptr) {
            ids.emplace(values[0], lengths[0]);
          }
        });
    if (!status.ok()) return Check(status);
  }
  return ids;
}

absl::StatusOr<MysqlMessageStore::IdSet> MysqlMessageStore::FindLocked(
    MysqlConnection* conn, const WriteBatch& batch, LockedScope scope,
    size_t limit) {
  const std::string lock_prefix =
      absl::StrCat("SELECT `id` FROM ", lock_target_, " WHERE `id` IN (");
  constexpr absl::string_view kLockSuffix = ") FOR UPDATE SKIP LOCKED";
  // The ids the batch names, each once; one that cannot be written into
  // SQL is not looked for (its unit fails or skips it anyway).
  std::vector<std::string> ids;
  IdSet named;
  std::string literal;
  auto add = [&](const std::string& id) {
    if (!named.insert(id).second) return;
    literal.clear();
    if (!AppendIdLiteral(table_.id_kind, id, &literal).ok() ||
        lock_prefix.size() + literal.size() + kLockSuffix.size() > limit) {
      return;
    }
    ids.push_back(id);
  };
  for (const Postponement& p : batch.postpones) add(p.id);
  for (const std::vector<std::string>& group : batch.ack_groups) {
    for (const std::string& id : group) add(id);
  }
  for (const NackGroup& group : batch.nack_groups) {
    for (const Nack& n : group.nacks) add(n.id);
  }
  for (const ExtendGroup& group : batch.extend_groups) {
    for (const auto& [id, epoch] : group.deliveries) add(id);
  }
  for (const RedriveGroup& group : batch.redrive_groups) {
    for (const std::string& id : group.ids) add(id);
  }
  IdSet locked;
  if (ids.empty()) return locked;
  // The consistent read first: a row whose INSERT finishes committing
  // between the two reads is then not visible to it, and is not taken for
  // locked.
  IdSet visible;
  if (scope == LockedScope::kVisible) {
    absl::StatusOr<std::vector<std::string>> read_sql = InListStatements(
        absl::StrCat("SELECT `id` FROM ", lock_target_, " WHERE `id` IN ("),
        ")", ids, /*skip_bad_ids=*/false, limit);
    if (!read_sql.ok()) return read_sql.status();
    absl::StatusOr<IdSet> read = ReadIds(conn, *read_sql);
    if (!read.ok()) return read.status();
    visible = *std::move(read);
  }
  absl::StatusOr<std::vector<std::string>> lock_sql = InListStatements(
      lock_prefix, kLockSuffix, ids, /*skip_bad_ids=*/false, limit);
  if (!lock_sql.ok()) return lock_sql.status();
  absl::StatusOr<IdSet> lockable = ReadIds(conn, *lock_sql);
  if (!lockable.ok()) return lockable.status();
  for (const std::string& id : ids) {
    if (lockable->contains(id)) continue;
    if (scope == LockedScope::kUnlocked || visible.contains(id)) {
      locked.insert(id);
    }
  }
  return locked;
}

absl::StatusOr<WriteResult> MysqlMessageStore::WriteUnits(
    const WriteBatch& batch, const IdSet& locked, bool all_locked_out,
    size_t limit) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  WriteResult result;
  result.acks.assign(batch.ack_groups.size(), int64_t{0});
  result.nacks.assign(batch.nack_groups.size(), NackCount{});
  result.extends.assign(batch.extend_groups.size(), int64_t{0});
  result.redrives.assign(batch.redrive_groups.size(), int64_t{0});
  result.locked.assign(locked.begin(), locked.end());
  std::sort(result.locked.begin(), result.locked.end());
  std::vector<WriteUnit> units =
      BuildUnits(batch, limit, locked, all_locked_out, &result);
  LiveUnits live(units);
  // All units in one transaction. When one fails permanently it is left out
  // and the others run again: nothing has committed until a run succeeds.
  while (!live.empty()) {
    size_t failed = kNoUnit;
    absl::Status status = RunTransaction(*conn, units, live.units(), &failed);
    if (status.ok()) {
      result.gtid = (*conn)->TrackedLastGtid();
      result.gtid_known = (*conn)->tracks_gtid();
      break;
    }
    if (msgq::IsUnavailable(status) ||
        status.code() == absl::StatusCode::kAborted) {
      return Check(status);
    }
    // Permanent. Outside a statement (BEGIN/COMMIT) it belongs to no unit:
    // all live units fail with it.
    std::vector<size_t> failing;
    if (failed == kNoUnit) {
      failing = live.units();
    } else if (units[failed].kind == UnitKind::kAcks) {
      // Its members, alone, will show whose failure it is.
      live.Dissolve(failed, units[failed].members);
    } else {
      if (const size_t owner = live.owner(failed); owner != LiveUnits::kNone) {
        live.Dissolve(owner, units[owner].members);
      }
      failing.push_back(failed);
    }
    for (size_t u : failing) {
      Report(units, units[u], status, result);
      live.Remove(u);
    }
    // Some permanent errors (ER_NET_PACKET_TOO_LARGE) close the connection.
    (void)Check(absl::OkStatus());
    if (!live.empty()) {
      conn = Conn();
      if (!conn.ok()) return conn.status();
    }
  }
  for (size_t u : live.units())
    Report(units, units[u], absl::OkStatus(), result);
  return result;
}

absl::StatusOr<WriteResult> MysqlMessageStore::Write(const WriteBatch& batch) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  if (absl::Status s = LearnLastErrorCharset(*conn, batch); !s.ok()) return s;
  const size_t limit = StatementLimit((*conn)->max_allowed_packet());
  if (skip_locked_refused_ || (!batch.expect_locked && !look_for_locks_)) {
    absl::StatusOr<WriteResult> written = WriteUnits(batch, {}, false, limit);
    if (skip_locked_refused_ || !IsLockWaitTimeout(written.status())) {
      return written;
    }
  }
  // Some row of the batch is locked by another transaction (it was, or a
  // statement just waited kLockWaitSeconds for one): look for the locked
  // rows and write the others. Should the write wait again (a row locked
  // between the look and the write, or one whose INSERT still commits),
  // the second pass leaves out every row the look could not lock.
  absl::StatusOr<WriteResult> written;
  for (const LockedScope scope :
       {LockedScope::kVisible, LockedScope::kUnlocked}) {
    conn = Conn();
    if (!conn.ok()) return conn.status();
    absl::StatusOr<IdSet> locked = FindLocked(*conn, batch, scope, limit);
    if (!locked.ok()) {
      if (msgq::IsUnavailable(locked.status()) ||
          locked.status().code() == absl::StatusCode::kAborted) {
        return Check(locked.status());
      }
      skip_locked_refused_ = true;
      LogTableWarning(table_.keyspace, table_.name, log_name_,
                      ": cannot look for locked rows (",
                      locked.status().message(),
                      "); a row another transaction keeps locked now holds "
                      "back all of the table's writes until it is released");
      return WriteUnits(batch, {}, false, limit);
    }
    written =
        WriteUnits(batch, *locked, scope == LockedScope::kUnlocked, limit);
    if (written.ok()) look_for_locks_ = !locked->empty();
    if (!IsLockWaitTimeout(written.status())) return written;
  }
  look_for_locks_ = true;
  return written;
}

}  // namespace msgq
