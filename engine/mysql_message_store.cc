#include "engine/mysql_message_store.h"

#include <algorithm>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/log.h"
#include "engine/sql_literal.h"

namespace msgq {
namespace {

int64_t ParseInt(const char* value, unsigned long length) {
  int64_t v = 0;
  if (value != nullptr) {
    (void)absl::SimpleAtoi(absl::string_view(value, length), &v);
  }
  return v;
}

}  // namespace

MysqlMessageStore::MysqlMessageStore(MessageTable table, MysqlOptions options)
    : table_(std::move(table)),
      options_(std::move(options)),
      quoted_table_(absl::StrCat(QuoteIdentifier(table_.keyspace), ".",
                                 QuoteIdentifier(table_.name))),
      log_name_(
          absl::StrCat("table `", table_.keyspace, "`.`", table_.name, "`")) {
  // Columns 0..3 are bookkeeping; the streamed ones follow, id first.
  std::vector<std::string> cols = {"`priority`", "`time_next`", "`epoch`"};
  for (const Column& c : table_.streamed)
    cols.push_back(QuoteIdentifier(c.name));
  select_prefix_ = absl::StrCat("SELECT ", absl::StrJoin(cols, ", "), " FROM ",
                                quoted_table_);
}

absl::StatusOr<MysqlConnection*> MysqlMessageStore::Conn() {
  if (conn_ == nullptr || conn_->broken()) {
    conn_.reset();
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(options_);
    if (!conn.ok()) return conn.status();
    conn_ = *std::move(conn);
  }
  return conn_.get();
}

absl::Status MysqlMessageStore::Check(absl::Status status) {
  if (conn_ != nullptr && conn_->broken()) conn_.reset();
  return status;
}

std::string MysqlMessageStore::IdList(const std::vector<std::string>& ids) {
  std::string out;
  out.reserve(ids.size() * 12);
  for (const std::string& id : ids) {
    const size_t mark = out.size();
    if (mark > 0) out.push_back(',');
    if (absl::Status s = AppendIdLiteral(table_.id_kind, id, &out); !s.ok()) {
      out.resize(mark);
      ++skipped_ids_;
      LogWarning(log_name_, ": skipping a row id that cannot be written: ",
                 s.message());
    }
  }
  // IN () is a syntax error; NULL matches nothing.
  return out.empty() ? "NULL" : out;
}

std::string MysqlMessageStore::PollSql(int64_t now, int limit) const {
  return absl::StrCat(select_prefix_,
                      " WHERE `time_acked` IS NULL AND `time_next` <= ", now,
                      " ORDER BY `priority`, `time_next`, `id` LIMIT ", limit);
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::ReadMessages(
    const std::string& sql, int expected) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  std::vector<Message> out;
  out.reserve(std::min(expected, 4096));
  absl::Status status = (*conn)->ForEachRow(
      sql, [&out](char** values, unsigned long* lengths, unsigned int n) {
        Message& m = out.emplace_back();
        m.priority = ParseInt(values[0], lengths[0]);
        m.time_next = ParseInt(values[1], lengths[1]);
        m.epoch = ParseInt(values[2], lengths[2]);
        m.id.assign(values[3], lengths[3]);
        auto row = std::make_shared<PackedRow>();
        row->lengths.reserve(n - 3);
        size_t total = 0;
        for (unsigned int i = 3; i < n; ++i) total += lengths[i];
        row->values.reserve(total);
        for (unsigned int i = 3; i < n; ++i) {
          if (values[i] == nullptr) {
            row->lengths.push_back(-1);
          } else {
            row->lengths.push_back(static_cast<int64_t>(lengths[i]));
            row->values.append(values[i], lengths[i]);
          }
        }
        m.row = std::move(row);
      });
  if (!status.ok()) return Check(status);
  return out;
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::PollDue(int64_t now,
                                                                int limit) {
  return ReadMessages(PollSql(now, limit), limit);
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::FetchDue(
    const std::vector<std::string>& ids, int64_t now) {
  if (ids.empty()) return std::vector<Message>();
  absl::StatusOr<MysqlConnection*> conn = Conn();  // IdList needs it
  if (!conn.ok()) return conn.status();
  return ReadMessages(
      absl::StrCat(select_prefix_, " WHERE `id` IN (", IdList(ids),
                   ") AND `time_acked` IS NULL AND `time_next` <= ", now,
                   " ORDER BY `priority`, `time_next`, `id`"),
      static_cast<int>(ids.size()));
}

std::string MysqlMessageStore::NextDueSql(int64_t now) const {
  // Grouping by the index prefix (time_acked, priority) lets MariaDB answer
  // with one index dive per priority ("Using index for group-by") instead of
  // scanning every unacked row; ORDER BY NULL skips sorting the groups.
  return absl::StrCat("SELECT `priority`, MIN(`time_next`) FROM ",
                      quoted_table_,
                      " WHERE `time_acked` IS NULL AND `time_next` > ", now,
                      " GROUP BY `time_acked`, `priority` ORDER BY NULL");
}

absl::StatusOr<std::optional<int64_t>> MysqlMessageStore::NextDueAfter(
    int64_t now) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<QueryResult> r = (*conn)->Query(NextDueSql(now));
  if (!r.ok()) return Check(r.status());
  std::optional<int64_t> earliest;
  for (const auto& row : r->rows) {
    if (!row[1].has_value()) continue;
    int64_t t = 0;
    if (!absl::SimpleAtoi(*row[1], &t)) continue;
    if (!earliest.has_value() || t < *earliest) earliest = t;
  }
  return earliest;
}

absl::StatusOr<std::vector<int64_t>> MysqlMessageStore::Write(
    const WriteBatch& batch) {
  absl::StatusOr<MysqlConnection*> conn_or = Conn();
  if (!conn_or.ok()) return conn_or.status();
  MysqlConnection* conn = *conn_or;
  std::map<int64_t, std::vector<std::string>> by_time;
  for (const Postponement& p : batch.postpones)
    by_time[p.time_next].push_back(p.id);
  std::vector<std::string> statements;
  for (const auto& [time_next, ids] : by_time) {
    statements.push_back(
        absl::StrCat("UPDATE ", quoted_table_, " SET `time_next` = ", time_next,
                     ", `epoch` = IFNULL(`epoch`, 0) + 1 WHERE `id` IN (",
                     IdList(ids), ") AND `time_acked` IS NULL"));
  }
  const size_t first_ack = statements.size();
  for (const auto& ids : batch.ack_groups) {
    statements.push_back(absl::StrCat(
        "UPDATE ", quoted_table_, " SET `time_acked` = ", batch.now,
        ", `time_next` = NULL WHERE `id` IN (", IdList(ids),
        ") AND `time_acked` IS NULL"));
  }
  std::vector<int64_t> acked;
  if (statements.empty()) return acked;
  const bool txn = statements.size() > 1;
  if (txn) {
    if (auto s = conn->Execute("BEGIN"); !s.ok()) return Check(s.status());
  }
  for (size_t i = 0; i < statements.size(); ++i) {
    absl::StatusOr<uint64_t> n = conn->Execute(statements[i]);
    if (!n.ok()) {
      if (txn && !conn->broken()) (void)conn->Execute("ROLLBACK");
      return Check(n.status());
    }
    if (i >= first_ack) acked.push_back(static_cast<int64_t>(*n));
  }
  if (txn) {
    if (auto s = conn->Execute("COMMIT"); !s.ok()) return Check(s.status());
  }
  return acked;
}

absl::StatusOr<int64_t> MysqlMessageStore::Purge(int64_t cutoff, int limit) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<uint64_t> n = (*conn)->Execute(
      absl::StrCat("DELETE FROM ", quoted_table_, " WHERE `time_acked` < ",
                   cutoff, " LIMIT ", limit));
  if (!n.ok()) return Check(n.status());
  return static_cast<int64_t>(*n);
}

}  // namespace msgq
