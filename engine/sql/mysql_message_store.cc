#include "engine/sql/mysql_message_store.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "engine/sql/consistent_snapshot.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

// Longer statements are split even when max_allowed_packet allows them.
constexpr int64_t kMaxStatementBytes = int64_t{4} << 20;

int64_t ParseInt(const char* value, unsigned long length) {
  int64_t v = 0;
  if (value != nullptr) {
    (void)absl::SimpleAtoi(absl::string_view(value, length), &v);
  }
  return v;
}

// The target of the UPDATEs that settle a send (postpone) or an ack.
//
// A row sent from its binlog row image can be postponed or acked before its
// INSERT is visible: MariaDB hands a transaction to binlog readers before
// InnoDB commits it. At READ COMMITTED a single-table UPDATE reads a row
// locked by another transaction "semi-consistently" (its last committed
// version) unless each row is a lookup of the whole primary key; a row not
// yet committed has none and is skipped, so the postpone or the ack changed
// nothing and the message stayed due: sent again at the next poll, well
// inside its ack wait.
//
// When the primary key is the id alone, FORCE INDEX (PRIMARY) makes
// `id IN (...)` a range of whole-key lookups (never a scan, which small
// tables would get), and such lookups wait for the inserting transaction's
// lock: the single-table UPDATE reads each row once. Otherwise (a primary
// key of (id, time_created), as partitioned tables have, or none) the
// UPDATE is multi-table, which never reads semi-consistently but reads each
// row twice (by key, then by position to update it); the PRIMARY index,
// when the id is in it, keeps the scan to the named ids.
std::string SettleTarget(const MessageTable& table,
                         const std::string& quoted_table) {
  if (table.primary_key_is_id) {
    return absl::StrCat(quoted_table, " FORCE INDEX (PRIMARY)");
  }
  return absl::StrCat(quoted_table,
                      table.id_in_primary_key ? " FORCE INDEX (PRIMARY)" : "",
                      " JOIN (SELECT 1) AS `msgq_settle`");
}

// Whether a column of this type may hold more than 64 KiB: the columns a
// row too large to read is read without.
bool IsLargeType(const std::string& data_type) {
  static constexpr const char* kLarge[] = {"blob", "mediumblob", "longblob",
                                           "text", "mediumtext", "longtext",
                                           "json"};
  const std::string type = absl::AsciiStrToLower(data_type);
  return std::find(std::begin(kLarge), std::end(kLarge), type) !=
         std::end(kLarge);
}

}  // namespace

MysqlMessageStore::MysqlMessageStore(MessageTable table, MysqlOptions options,
                                     MysqlPool* pool, ReadLimits limits)
    : table_(std::move(table)),
      options_(std::move(options)),
      limits_(limits),
      quoted_table_(absl::StrCat(QuoteIdentifier(table_.keyspace), ".",
                                 QuoteIdentifier(table_.name))),
      log_name_(
          absl::StrCat("table `", table_.keyspace, "`.`", table_.name, "`")),
      settle_target_(SettleTarget(table_, quoted_table_)),
      lock_target_(absl::StrCat(quoted_table_, table_.id_in_primary_key
                                                   ? " FORCE INDEX (PRIMARY)"
                                                   : "")),
      failure_sql_(table_, quoted_table_),
      partition_sql_(table_, quoted_table_),
      pool_(pool) {
  // The bookkeeping columns come first; the streamed ones follow, id first.
  std::vector<std::string> cols = {"`priority`", "`time_next`", "`epoch`"};
  if (table_.has_time_created) cols.push_back("`time_created`");
  // The key of msgq_fair_by or msgq_concurrency_by (one column if both).
  IdKind key_kind = table_.fair_kind;
  key_column_ = table_.settings.fair_by;
  if (table_.settings.concurrency > 0) {
    absl::StatusOr<ConcurrencyKey> key = ResolveConcurrencyKey(table_);
    if (key.ok()) {
      key_column_ = key->column;
      key_kind = key->kind;
    } else {
      concurrency_error_ = key.status();  // every poll says it
    }
  }
  if (!key_column_.empty()) {
    fair_column_ = cols.size();
    cols.push_back(QuoteIdentifier(key_column_));
  }
  // A row whose large columns exceed max_row_bytes comes without them.
  std::vector<std::string> large;
  for (const Column& c : table_.streamed) {
    if (IsLargeType(c.data_type)) {
      large.push_back(
          absl::StrCat("IFNULL(LENGTH(", QuoteIdentifier(c.name), "), 0)"));
    }
  }
  std::string too_large;
  if (!large.empty() && limits_.max_row_bytes != SIZE_MAX) {
    const std::string bytes =
        absl::StrCat("(", absl::StrJoin(large, " + "), ")");
    too_large = absl::StrCat(bytes, " > ", limits_.max_row_bytes);
    size_column_ = cols.size();
    cols.push_back(bytes);
  }
  first_streamed_ = cols.size();
  for (const Column& c : table_.streamed) {
    const std::string name = QuoteIdentifier(c.name);
    cols.push_back(!too_large.empty() && IsLargeType(c.data_type)
                       ? absl::StrCat("IF(", too_large, ", NULL, ", name, ")")
                       : name);
  }
  select_prefix_ = absl::StrCat("SELECT ", absl::StrJoin(cols, ", "), " FROM ",
                                quoted_table_);
  if (!key_column_.empty()) {
    fair_sql_.emplace(quoted_table_, select_prefix_, key_column_, key_kind);
  }
  if (!table_.settings.order_by.empty()) {
    // msgq_order_by: only a key's head may be read, the row with no smaller
    // id of the same key that is unacked and not dead (a dead row leaves
    // the line; NULL keys are not ordered). Reads with
    // INDEX (key, time_acked, id) stop at the first such row.
    const std::string key = QuoteIdentifier(table_.settings.order_by);
    head_condition_ = absl::StrCat(
        " AND NOT EXISTS (SELECT 1 FROM ", quoted_table_,
        " AS `msgq_head` WHERE `msgq_head`.", key, " = ", quoted_table_, ".",
        key,
        " AND `msgq_head`.`time_acked` IS NULL AND `msgq_head`.`time_next` "
        "IS NOT NULL AND `msgq_head`.`id` < ",
        quoted_table_, ".`id`)");
  }
}

absl::StatusOr<MysqlConnection*> MysqlMessageStore::Conn() {
  if (pool_ != nullptr) {
    if (lease_.has_value() && (*lease_)->broken()) lease_.reset();
    if (!lease_.has_value()) {
      absl::StatusOr<MysqlPool::Lease> lease = pool_->Borrow(kBorrowTimeout);
      if (!lease.ok()) {
        if (lease.status().code() != absl::StatusCode::kResourceExhausted) {
          return lease.status();
        }
        return absl::UnavailableError(absl::StrCat(
            lease.status().message(), " (--mysql_max_connections): retry"));
      }
      lease_.emplace(*std::move(lease));
      ++conn_generation_;
    }
  } else if (conn_ == nullptr || conn_->broken()) {
    conn_.reset();
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(options_);
    if (!conn.ok()) return conn.status();
    conn_ = *std::move(conn);
    ++conn_generation_;
  }
  MysqlConnection* conn = pool_ != nullptr ? lease_->get() : conn_.get();
  // Pooled connections are shared with other tables' stores, which set the
  // same value: a statement only the first time.
  if (absl::Status s = conn->SetLockWaitTimeout(kLockWaitSeconds); !s.ok()) {
    return Check(s);
  }
  return conn;
}

MysqlConnection* MysqlMessageStore::CurrentConn() {
  if (pool_ != nullptr) return lease_.has_value() ? lease_->get() : nullptr;
  return conn_.get();
}

absl::Status MysqlMessageStore::BeginSnapshotRead() {
  read_position_ = {};
  snapshot_conn_ = nullptr;
  if (!snapshot_reads_) return absl::OkStatus();
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  if (!(*conn)->log_bin()) return absl::OkStatus();
  absl::StatusOr<BinlogPosition> at = BeginConsistentSnapshot(**conn);
  if (!at.ok()) return Check(at.status());
  snapshot_conn_ = *conn;
  snapshot_generation_ = conn_generation_;
  if (!at->known()) {
    // The server does not say where a snapshot is: read as without a
    // binary log from now on.
    snapshot_reads_ = false;
    return EndSnapshotRead(absl::StatusOr<bool>(true)).status();
  }
  read_position_ = *std::move(at);
  return absl::OkStatus();
}

absl::Status MysqlMessageStore::Check(absl::Status status) {
  if (conn_ != nullptr && conn_->broken()) conn_.reset();
  if (lease_.has_value() && (*lease_)->broken()) lease_.reset();
  return status;
}

size_t StatementLimit(int64_t max_allowed_packet) {
  // The packet also carries the command byte; keep a margin for it and for
  // anything the server counts that we do not.
  const int64_t margin = std::min<int64_t>(1024, max_allowed_packet / 16);
  return static_cast<size_t>(std::clamp<int64_t>(max_allowed_packet - margin,
                                                 256, kMaxStatementBytes));
}

absl::StatusOr<std::vector<std::string>> MysqlMessageStore::InListStatements(
    absl::string_view prefix, absl::string_view suffix,
    const std::vector<std::string>& ids, bool skip_bad_ids, size_t limit) {
  std::vector<std::string> out;
  std::string current;
  std::string literal;
  const size_t fixed = prefix.size() + suffix.size();
  if (!ids.empty() && fixed >= limit) {
    // Not an id's fault (e.g. a nack's long reason): no id can be written.
    return absl::InvalidArgumentError(absl::StrCat(
        "a statement of ", fixed, " bytes before its ids does not fit in ",
        limit, " bytes (max_allowed_packet)"));
  }
  auto refuse = [&](absl::Status status) -> absl::Status {
    if (!skip_bad_ids) return status;
    ++skipped_ids_;
    LogTableWarning(table_.keyspace, table_.name, log_name_,
                    ": skipping a row id: ", status.message());
    return absl::OkStatus();
  };
  for (const std::string& id : ids) {
    literal.clear();
    if (absl::Status s = AppendIdLiteral(table_.id_kind, id, &literal);
        !s.ok()) {
      if (absl::Status r = refuse(std::move(s)); !r.ok()) return r;
      continue;
    }
    if (fixed + literal.size() > limit) {
      absl::Status s = absl::InvalidArgumentError(absl::StrCat(
          "id of ", id.size(), " bytes does not fit in a statement of at most ",
          limit, " bytes (max_allowed_packet)"));
      if (absl::Status r = refuse(std::move(s)); !r.ok()) return r;
      continue;
    }
    if (!current.empty() &&
        current.size() + 1 + literal.size() + suffix.size() > limit) {
      current.append(suffix.data(), suffix.size());
      out.push_back(std::move(current));
      current.clear();
    }
    if (current.empty()) {
      current.reserve(
          std::min(limit, fixed + ids.size() * (literal.size() + 1)));
      current.append(prefix.data(), prefix.size());
    } else {
      current.push_back(',');
    }
    current += literal;
  }
  if (!current.empty()) {
    current.append(suffix.data(), suffix.size());
    out.push_back(std::move(current));
  }
  return out;
}

std::string MysqlMessageStore::PollSql(std::optional<int64_t> now,
                                       int64_t limit) const {
  return absl::StrCat(
      select_prefix_,
      " WHERE `time_acked` IS NULL AND `time_next` <= ", NowOperand(now),
      head_condition_, " ORDER BY `priority`, `time_next`, `id` LIMIT ",
      std::clamp<int64_t>(limit, 0, kMaxPollRows));
}

std::string MysqlMessageStore::PollIdsSql(std::optional<int64_t> now,
                                          int64_t limit) const {
  return absl::StrCat(
      "SELECT `id` FROM ", quoted_table_,
      " WHERE `time_acked` IS NULL AND `time_next` <= ", NowOperand(now),
      " ORDER BY `priority`, `time_next`, `id` LIMIT ",
      std::clamp<int64_t>(limit, 0, kMaxPollRows));
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::ReadMessages(
    const std::string& sql, int64_t expected, size_t* bytes_left) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  std::vector<Message> out;
  out.reserve(static_cast<size_t>(std::clamp<int64_t>(expected, 0, 4096)));
  absl::Status status = (*conn)->ForEachRow(
      sql, [&out, bytes_left, this](char** values, unsigned long* lengths,
                                    unsigned int n) {
        // Past the read's bytes the rest of the result is not read.
        if (*bytes_left == 0) return false;
        Message& m = out.emplace_back();
        if (size_column_ != 0) {
          const int64_t bytes =
              ParseInt(values[size_column_], lengths[size_column_]);
          if (bytes > 0 && static_cast<size_t>(bytes) > limits_.max_row_bytes) {
            m.unread_bytes = static_cast<size_t>(bytes);
          }
        }
        m.priority = ParseInt(values[0], lengths[0]);
        m.time_next = ParseInt(values[1], lengths[1]);
        m.epoch = ParseInt(values[2], lengths[2]);
        if (table_.has_time_created) {
          m.time_created = ParseInt(values[3], lengths[3]);
        }
        if (fair_column_ != 0 && values[fair_column_] != nullptr) {
          m.fair_key.emplace(values[fair_column_], lengths[fair_column_]);
        }
        const unsigned int first = static_cast<unsigned int>(first_streamed_);
        m.id.assign(values[first], lengths[first]);
        auto row = std::make_shared<PackedRow>();
        row->lengths.reserve(n - first);
        size_t total = 0;
        for (unsigned int i = first; i < n; ++i) total += lengths[i];
        row->values.reserve(total);
        for (unsigned int i = first; i < n; ++i) {
          if (values[i] == nullptr) {
            row->lengths.push_back(-1);
          } else {
            row->lengths.push_back(static_cast<int64_t>(lengths[i]));
            row->values.append(values[i], lengths[i]);
          }
        }
        m.row = std::move(row);
        *bytes_left -=
            std::min(*bytes_left, std::max<size_t>(1, m.WireBytes()));
        return true;
      });
  if (!status.ok()) return Check(status);
  return out;
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::PollDue(
    int64_t /*now: MySQL's clock judges*/, int64_t limit) {
  if (table_.settings.concurrency > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_name_, ": msgq_concurrency_by polls by key"));
  }
  if (absl::Status s = BeginSnapshotRead(); !s.ok()) return s;
  if (fair_sql_.has_value()) {
    return EndSnapshotRead(FairPollDue(limit, nullptr));
  }
  size_t bytes_left = limits_.max_read_bytes;
  return EndSnapshotRead(
      ReadMessages(PollSql(std::nullopt, limit), limit, &bytes_left));
}

absl::StatusOr<std::vector<std::string>> MysqlMessageStore::PollDueIds(
    int64_t /*now: MySQL's clock judges*/, int64_t limit) {
  if (!polls_ids()) return absl::UnimplementedError("polling ids");
  read_position_ = {};  // ids only: the rows are fetched
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(std::clamp<int64_t>(limit, 0, 4096)));
  absl::Status status = (*conn)->ForEachRow(
      PollIdsSql(std::nullopt, limit),
      [&ids](char** values, unsigned long* lengths, unsigned int n) {
        if (n >= 1 && values[0] != nullptr) {
          ids.emplace_back(values[0], lengths[0]);
        }
      });
  if (!status.ok()) return Check(status);
  return ids;
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::FetchDue(
    const std::vector<std::string>& ids,
    int64_t /*now: MySQL's clock judges*/) {
  read_position_ = {};
  if (ids.empty()) return std::vector<Message>();
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<std::vector<std::string>> statements = InListStatements(
      absl::StrCat(select_prefix_, " WHERE `id` IN ("),
      absl::StrCat(") AND `time_acked` IS NULL AND `time_next` <= ",
                   kMysqlNowNs, head_condition_),
      ids,
      /*skip_bad_ids=*/true, StatementLimit((*conn)->max_allowed_packet()));
  if (!statements.ok()) return statements.status();
  if (absl::Status s = BeginSnapshotRead(); !s.ok()) return s;
  std::vector<Message> out;
  size_t bytes_left = limits_.max_read_bytes;
  for (const std::string& sql : *statements) {
    if (bytes_left == 0) break;
    absl::StatusOr<std::vector<Message>> part =
        ReadMessages(sql, static_cast<int64_t>(ids.size()), &bytes_left);
    if (!part.ok()) return EndSnapshotRead(std::move(part));
    if (out.empty()) {
      out = *std::move(part);
    } else {
      for (Message& m : *part) out.push_back(std::move(m));
    }
  }
  return EndSnapshotRead(absl::StatusOr<std::vector<Message>>(std::move(out)));
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::ReadByIds(
    const std::vector<std::string>& ids) {
  read_position_ = {};
  if (ids.empty()) return std::vector<Message>();
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<std::vector<std::string>> statements = InListStatements(
      absl::StrCat(select_prefix_, " WHERE `id` IN ("), ")", ids,
      /*skip_bad_ids=*/true, StatementLimit((*conn)->max_allowed_packet()));
  if (!statements.ok()) return statements.status();
  std::vector<Message> out;
  size_t bytes_left = limits_.max_read_bytes;
  for (const std::string& sql : *statements) {
    if (bytes_left == 0) break;
    absl::StatusOr<std::vector<Message>> part =
        ReadMessages(sql, static_cast<int64_t>(ids.size()), &bytes_left);
    if (!part.ok()) return part.status();
    for (Message& m : *part) out.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<int64_t> MysqlMessageStore::Purge(int64_t cutoff, int limit) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  // cutoff is now - vt_purge_after (message_store.h).
  const TableSettings& s = table_.settings;
  absl::StatusOr<uint64_t> n = (*conn)->Execute(absl::StrCat(
      "DELETE FROM ", quoted_table_, " WHERE `time_acked` < ", cutoff,
      KeepDedupKeys(absl::ToInt64Nanoseconds(s.dedup_window),
                    cutoff + absl::ToInt64Nanoseconds(s.purge_after)),
      " LIMIT ", limit));
  if (!n.ok()) return Check(n.status());
  return static_cast<int64_t>(*n);
}

absl::StatusOr<int64_t> MysqlMessageStore::PurgeDead(int64_t cutoff,
                                                     int limit) {
  if (!table_.has_time_dead) {
    return absl::FailedPreconditionError(absl::StrCat(
        log_name_, ": PurgeDead needs a time_dead column (bigint, Unix ns)"));
  }
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<uint64_t> n =
      (*conn)->Execute(failure_sql_.PurgeDead(cutoff, limit));
  if (!n.ok()) return Check(n.status());
  return static_cast<int64_t>(*n);
}

absl::StatusOr<PartitionReport> MysqlMessageStore::MaintainPartitions(
    int64_t now) {
  if (!table_.purge_by_partition) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_name_, ": not RANGE-partitioned on time_created"));
  }
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<PartitionReport> report =
      msgq::MaintainPartitions(**conn, table_, partition_sql_, now);
  if (!report.ok()) return Check(report.status());
  return report;
}

absl::StatusOr<int64_t> MysqlMessageStore::CountDead() {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<QueryResult> r = (*conn)->Query(failure_sql_.CountDead());
  if (!r.ok()) return Check(r.status());
  int64_t n = 0;
  if (r->rows.size() != 1 || r->rows[0].empty() || !r->rows[0][0].has_value() ||
      !absl::SimpleAtoi(*r->rows[0][0], &n)) {
    return absl::InternalError(
        absl::StrCat(log_name_, ": COUNT(*) of dead rows is not a number"));
  }
  return n;
}

absl::StatusOr<std::vector<DeadRow>> MysqlMessageStore::ListDead(
    const std::string& after_id, int limit) {
  std::string after;
  if (!after_id.empty()) {
    absl::StatusOr<std::string> literal = IdLiteral(table_.id_kind, after_id);
    if (!literal.ok()) return literal.status();
    after = *std::move(literal);
  }
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  const int clamped =
      static_cast<int>(std::clamp<int64_t>(limit, 0, kMaxPollRows));
  std::vector<DeadRow> out;
  const int error_col = failure_sql_.last_error_column();
  const int dead_col = failure_sql_.time_dead_column();
  const int created_col = failure_sql_.time_created_column();
  absl::Status status = (*conn)->ForEachRow(
      failure_sql_.ListDead(after, clamped),
      [&](char** values, unsigned long* lengths, unsigned int) {
        DeadRow& row = out.emplace_back();
        row.id.assign(values[0], lengths[0]);
        row.epoch = ParseInt(values[1], lengths[1]);
        if (error_col >= 0 && values[error_col] != nullptr) {
          row.last_error.assign(values[error_col], lengths[error_col]);
        }
        if (dead_col >= 0) {
          row.time_dead = ParseInt(values[dead_col], lengths[dead_col]);
        }
        if (created_col >= 0) {
          row.time_created =
              ParseInt(values[created_col], lengths[created_col]);
        }
      });
  if (!status.ok()) return Check(status);
  return out;
}

}  // namespace msgq
