// MysqlPauseStore: which message tables are paused (msgq pause/resume), kept
// in MySQL so the state survives restarts and every msgqd serving a table
// sees it:
//
//   msgq_paused(keyspace, name, since, instance)   one row per paused table
//
// in `database` (the first of --databases, next to msgq_leases). The table
// is created by the first pause that finds it missing (a table an
// administrator created needs no CREATE grant); until then no table means
// nothing is paused. `since` is Unix ns on the pausing msgqd's clock,
// `instance` its --instance_id (both for operators only).
//
// Stateless apart from the names: each call runs on the connection given
// (a pool lease). Errors: the statement's own (mysql_connection.h),
// UNAVAILABLE when MySQL cannot be reached.
// Thread-safe (const).
#ifndef MSGQ_ENGINE_SQL_MYSQL_PAUSE_STORE_H_
#define MSGQ_ENGINE_SQL_MYSQL_PAUSE_STORE_H_

#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

class MysqlPauseStore {
 public:
  // (keyspace, table name)
  using Key = std::pair<std::string, std::string>;

  explicit MysqlPauseStore(const std::string& database);

  // The paused tables; empty when the table does not exist yet.
  absl::StatusOr<std::set<Key>> Read(MysqlConnection& conn) const;
  // Pauses (inserts the row; the table is created when missing) or resumes
  // (deletes it) `table`. Idempotent.
  absl::Status Write(MysqlConnection& conn, const Key& table, bool paused,
                     int64_t now_ns, const std::string& instance) const;

 private:
  const std::string table_;  // `db`.`msgq_paused`
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_PAUSE_STORE_H_
