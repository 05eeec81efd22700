#include "tools/msgq_bench/status_counters.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace msgq::bench {

const std::vector<std::string>& CounterNames() {
  static const auto* names = new std::vector<std::string>{
      "Questions",
      "Com_select",
      "Com_insert",
      "Com_update",
      "Com_delete",
      "Com_begin",
      "Com_commit",
      // Rows the server layer read / sent; Handler_* count row operations
      // (MariaDB has no Innodb_rows_*; MySQL has both).
      "Rows_read",
      "Rows_sent",
      "Handler_read_key",
      "Handler_read_next",
      "Handler_write",
      "Handler_update",
      "Handler_delete",
      "Innodb_rows_read",
      "Innodb_rows_inserted",
      "Innodb_rows_updated",
      "Innodb_rows_deleted",
      "Innodb_buffer_pool_read_requests",
      "Innodb_data_fsyncs",
      "Innodb_os_log_written",
      "Binlog_bytes_written",
      "Bytes_sent",
  };
  return *names;
}

absl::StatusOr<StatusCounters> StatusCounters::Read(MysqlConnection& conn) {
  std::vector<std::string> quoted;
  for (const std::string& n : CounterNames()) {
    quoted.push_back(absl::StrCat("'", n, "'"));
  }
  absl::StatusOr<QueryResult> r =
      conn.Query(absl::StrCat("SHOW GLOBAL STATUS WHERE Variable_name IN (",
                              absl::StrJoin(quoted, ","), ")"));
  if (!r.ok()) return r.status();
  StatusCounters c;
  for (const std::string& n : CounterNames()) c.values[n] = 0;
  for (const auto& row : r->rows) {
    if (row.size() < 2 || !row[0] || !row[1]) continue;
    int64_t v = 0;
    if (absl::SimpleAtoi(*row[1], &v)) {
      // SHOW STATUS matches names case-insensitively; keep ours.
      for (const std::string& n : CounterNames()) {
        if (absl::EqualsIgnoreCase(n, *row[0])) c.values[n] = v;
      }
    }
  }
  return c;
}

StatusCounters StatusCounters::Minus(const StatusCounters& before) const {
  StatusCounters d;
  for (const auto& [name, v] : values) d.values[name] = v - before.Get(name);
  return d;
}

int64_t StatusCounters::Get(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? 0 : it->second;
}

}  // namespace msgq::bench
