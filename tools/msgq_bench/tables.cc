#include "tools/msgq_bench/tables.h"

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace msgq::bench {

std::string Payload(int64_t id, int bytes) {
  // {"id":123,"kind":"bench","pad":"xxxx"}
  std::string head =
      absl::StrCat("{\"id\":", id, ",\"kind\":\"bench\",\"pad\":\"");
  const std::string tail = "\"}";
  int pad = bytes - static_cast<int>(head.size() + tail.size());
  if (pad < 0) pad = 0;
  head.append(static_cast<size_t>(pad), 'x');
  head += tail;
  return head;
}

std::string Qualified(const std::string& db, const std::string& name) {
  return absl::StrCat(QuoteIdentifier(db), ".", QuoteIdentifier(name));
}

std::string MessageTableDdl(const std::string& qualified,
                            const std::string& comment) {
  return absl::StrCat(
      "CREATE TABLE ", qualified,
      " (id bigint NOT NULL, priority tinyint NOT NULL DEFAULT 50, "
      "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
      "time_acked bigint DEFAULT NULL, message json, PRIMARY KEY (id), "
      "INDEX poller_idx (time_acked, priority, time_next)) COMMENT '",
      comment, "'");
}

std::string OutboxTableDdl(const std::string& qualified) {
  return absl::StrCat(
      "CREATE TABLE ", qualified,
      " (id bigint NOT NULL, payload json, processed_at bigint DEFAULT NULL, "
      "PRIMARY KEY (id), INDEX pending_idx (processed_at, id))");
}

absl::StatusOr<int64_t> QueryInt(MysqlConnection& conn,
                                 const std::string& sql) {
  absl::StatusOr<QueryResult> r = conn.Query(sql);
  if (!r.ok()) return r.status();
  if (r->rows.size() != 1 || r->rows[0].empty()) {
    return absl::InternalError(absl::StrCat("expected one value from ", sql));
  }
  int64_t v = 0;
  if (r->rows[0][0].has_value()) (void)absl::SimpleAtoi(*r->rows[0][0], &v);
  return v;
}

absl::StatusOr<double> WaitForPurge(MysqlConnection& conn, int64_t max_history,
                                    absl::Duration timeout) {
  const absl::Time start = absl::Now();
  while (true) {
    absl::StatusOr<QueryResult> r =
        conn.Query("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'");
    if (!r.ok()) return r.status();
    int64_t history = 0;
    if (r->rows.empty() || !r->rows[0][1].has_value() ||
        !absl::SimpleAtoi(*r->rows[0][1], &history)) {
      return 0.0;  // this server does not say: nothing to wait for
    }
    const double waited = absl::ToDoubleSeconds(absl::Now() - start);
    if (history <= max_history) return waited;
    if (absl::Now() - start > timeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          "InnoDB history list still ", history, " after ", waited, " s"));
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
}

int ServerPid(MysqlConnection& conn) {
  absl::StatusOr<QueryResult> r = conn.Query("SELECT @@pid_file");
  if (!r.ok() || r->rows.empty() || !r->rows[0][0].has_value()) return 0;
  std::ifstream f(*r->rows[0][0]);
  int pid = 0;
  if (!(f >> pid)) return 0;
  return pid;
}

}  // namespace msgq::bench
