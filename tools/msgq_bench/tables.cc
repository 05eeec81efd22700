#include "tools/msgq_bench/tables.h"

#include <algorithm>
#include <fstream>
#include <future>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "engine/status_macros.h"
#include "tools/msgq_bench/clock.h"

namespace msgq::bench {
namespace {

absl::Status InsertRange(const MysqlOptions& mysql, const std::string& table,
                         const std::string& column, int64_t first, int64_t last,
                         int payload_bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<MysqlConnection> conn,
                   MysqlConnection::Connect(mysql));
  // At most 1000 rows and about 4 MiB per statement: well within the
  // server's default max_allowed_packet (16 MiB) at any payload size.
  const int64_t per_statement =
      std::clamp<int64_t>((4 << 20) / std::max(payload_bytes, 1), 1, 1000);
  for (int64_t id = first; id <= last; id += per_statement) {
    std::string sql =
        absl::StrCat("INSERT INTO ", table, " (id, ", column, ") VALUES ");
    for (int64_t i = id; i <= std::min(last, id + per_statement - 1); ++i) {
      absl::StrAppend(&sql, i == id ? "" : ",", "(", i, ",'",
                      Payload(i, payload_bytes), "')");
    }
    RETURN_IF_ERROR(conn->Execute(sql).status());
  }
  return absl::OkStatus();
}

}  // namespace

std::string Payload(int64_t id, int bytes) {
  std::string s =
      absl::StrCat("{\"id\":", id, ",\"kind\":\"bench\",\"pad\":\"");
  s.append(static_cast<size_t>(std::max<int64_t>(
               0, bytes - static_cast<int64_t>(s.size()) - 2)),
           'x');
  return s + "\"}";
}

std::string Qualified(const std::string& db, const std::string& name) {
  return absl::StrCat(QuoteIdentifier(db), ".", QuoteIdentifier(name));
}

std::string MessageTableDdl(const std::string& qualified,
                            const std::string& comment, int keys,
                            int64_t partition_interval_s) {
  const std::string key =
      keys <= 0 ? ""
                : absl::StrCat("k int AS (id % ", keys,
                               ") PERSISTENT, INDEX key_idx (time_acked, k, "
                               "priority, time_next), ");
  const std::string columns = absl::StrCat(
      "CREATE TABLE ", qualified,
      " (id bigint NOT NULL, priority tinyint NOT NULL DEFAULT 50, "
      "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
      "time_acked bigint DEFAULT NULL, message json, ",
      key);
  if (partition_interval_s <= 0) {
    return absl::StrCat(
        columns,
        "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, "
        "time_next)) COMMENT '",
        comment, "'");
  }
  const int64_t now_s = absl::ToUnixSeconds(absl::Now());
  const int64_t bound_s =
      (now_s / partition_interval_s + 2) * partition_interval_s;
  return absl::StrCat(
      columns,
      "time_created bigint NOT NULL DEFAULT (UNIX_TIMESTAMP(NOW(6)) * "
      "1000000000), PRIMARY KEY (id, time_created), INDEX poller_idx "
      "(time_acked, priority, time_next, id)) COMMENT '",
      comment, "' PARTITION BY RANGE (time_created) (PARTITION p",
      absl::FormatTime("%Y%m%d%H%M%S", absl::FromUnixSeconds(bound_s),
                       absl::UTCTimeZone()),
      " VALUES LESS THAN (", bound_s,
      "000000000), PARTITION pmax VALUES LESS "
      "THAN MAXVALUE)");
}

std::string OutboxTableDdl(const std::string& qualified) {
  return absl::StrCat(
      "CREATE TABLE ", qualified,
      " (id bigint NOT NULL, payload json, processed_at bigint DEFAULT NULL, "
      "PRIMARY KEY (id), INDEX pending_idx (processed_at, id))");
}

absl::Status Recreate(MysqlConnection& conn, const std::string& qualified,
                      const std::string& ddl) {
  RETURN_IF_ERROR(
      conn.Execute(absl::StrCat("DROP TABLE IF EXISTS ", qualified)).status());
  return conn.Execute(ddl).status();
}

absl::StatusOr<double> Preload(const MysqlOptions& mysql,
                               const std::string& qualified,
                               const std::string& ddl,
                               const std::string& payload_column, int64_t rows,
                               int payload_bytes) {
  {
    ASSIGN_OR_RETURN(std::unique_ptr<MysqlConnection> conn,
                     MysqlConnection::Connect(mysql));
    RETURN_IF_ERROR(Recreate(*conn, qualified, ddl));
  }
  const int64_t start = NowNs();
  const int64_t per = (rows + 1) / 2;  // two connections
  std::vector<std::future<absl::Status>> parts;
  for (int64_t first = 1; first <= rows; first += per) {
    parts.push_back(std::async(std::launch::async, [&, first] {
      return InsertRange(mysql, qualified, payload_column, first,
                         std::min(rows, first + per - 1), payload_bytes);
    }));
  }
  for (std::future<absl::Status>& part : parts) {
    RETURN_IF_ERROR(part.get());
  }
  return NsToSeconds(NowNs() - start);
}

absl::StatusOr<int64_t> CountRows(MysqlConnection& conn,
                                  const std::string& qualified,
                                  const std::string& where) {
  const std::string sql =
      absl::StrCat("SELECT COUNT(*) FROM ", qualified, " WHERE ", where);
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(sql));
  int64_t n = 0;
  if (r.rows.size() != 1 || r.rows[0].empty() || !r.rows[0][0] ||
      !absl::SimpleAtoi(*r.rows[0][0], &n)) {
    return absl::InternalError(absl::StrCat("no count from ", sql));
  }
  return n;
}

absl::StatusOr<double> TableMib(MysqlConnection& conn, const std::string& db,
                                const std::string& name) {
  RETURN_IF_ERROR(
      conn.Query(absl::StrCat("ANALYZE TABLE ", Qualified(db, name))).status());
  ASSIGN_OR_RETURN(
      QueryResult r,
      conn.Query(absl::StrCat(
          "SELECT (data_length + index_length) / 1048576 FROM "
          "information_schema.TABLES WHERE table_schema = ",
          conn.QuoteString(db), " AND table_name = ", conn.QuoteString(name))));
  double mib = 0;
  if (r.rows.size() != 1 || !r.rows[0][0] ||
      !absl::SimpleAtod(*r.rows[0][0], &mib)) {
    return absl::NotFoundError(absl::StrCat("no size of ", db, ".", name));
  }
  return mib;
}

double WaitForPurge(MysqlConnection& conn) {
  const absl::Time start = absl::Now();
  while (true) {
    absl::StatusOr<QueryResult> r =
        conn.Query("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'");
    if (!r.ok()) {
      LogWarning("msgq-bench: ", r.status().message());
      return 120;
    }
    int64_t history = 0;
    if (r->rows.empty() || !r->rows[0][1].has_value() ||
        !absl::SimpleAtoi(*r->rows[0][1], &history)) {
      return 0;  // this server does not say: nothing to wait for
    }
    const double waited = absl::ToDoubleSeconds(absl::Now() - start);
    if (history <= 20) return waited;
    if (waited > 120) {
      LogWarning("msgq-bench: InnoDB history list still ", history, " after ",
                 waited, " s");
      return 120;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
}

int ServerPid(MysqlConnection& conn) {
  absl::StatusOr<QueryResult> r = conn.Query("SELECT @@pid_file");
  if (!r.ok() || r->rows.empty() || !r->rows[0][0].has_value()) return 0;
  std::ifstream f(*r->rows[0][0]);
  int pid = 0;
  return f >> pid ? pid : 0;
}

}  // namespace msgq::bench
