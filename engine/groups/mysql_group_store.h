// MysqlGroupStore: the consumer groups of the message tables of one
// database, in that database's msgq_groups and msgq_group_messages
// (docs/design/consumer-groups.md#state-a-floor-and-its-exceptions):
//
//   msgq_groups(table_name, group_name, floor_gtid, filter, created_at,
//               paused, settings)           one row per (table, group)
//   msgq_group_messages(table_name, group_name, id, attempts, time_next,
//               time_dead, last_error)      a group's exceptions
//
// Both tables are created by the first Insert() into a database that has
// neither (so a deployment without groups needs no CREATE grant, and one
// whose administrator created them needs none either); until then the
// database has no groups. `created_at` is Unix ns on MySQL's clock.
//
// Each call runs on the connection given (a pool lease). Errors: the
// statement's own (mysql_connection.h), UNAVAILABLE when MySQL cannot be
// reached; FAILED_PRECONDITION naming the GRANT to run when MySQL denies
// msgqd a statement on the tables.
//
// Thread-safe (const).
#ifndef MSGQ_ENGINE_GROUPS_MYSQL_GROUP_STORE_H_
#define MSGQ_ENGINE_GROUPS_MYSQL_GROUP_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

// One row of msgq_groups.
struct GroupRow {
  std::string keyspace;  // the database
  std::string table;
  std::string name;
  std::string floor_gtid;  // "" = before every transaction (earliest)
  std::string filter;      // canonical (group_filter.h); "" = every row
  int64_t created_at_ns = 0;
  bool paused = false;
  friend bool operator==(const GroupRow&, const GroupRow&) = default;
};

// One row of msgq_group_messages: a message a group retries or holds dead.
struct GroupExceptionRow {
  std::string id;  // text form, as streamed
  int64_t attempts = 0;
  std::optional<int64_t> time_next;  // Unix ns; nullopt when dead
  std::optional<int64_t> time_dead;  // Unix ns; set when dead
  std::string last_error;            // "" leaves the stored one (upsert)
  friend bool operator==(const GroupExceptionRow&,
                         const GroupExceptionRow&) = default;
};

class MysqlGroupStore {
 public:
  explicit MysqlGroupStore(std::string database);

  // Inserts `row` (its keyspace is this store's database), with
  // created_at = now on MySQL's clock, and returns it as stored. Creates
  // both tables when msgq_groups is missing. ALREADY_EXISTS "group "G" of
  // `db`.`t` already exists" when the (table, group) row exists.
  absl::StatusOr<GroupRow> Insert(MysqlConnection& conn, GroupRow row) const;
  // The groups of `table` (every table's when empty), by table and name;
  // none when msgq_groups does not exist.
  absl::StatusOr<std::vector<GroupRow>> Read(MysqlConnection& conn,
                                             const std::string& table) const;
  // Deletes the group's row and its exceptions in one transaction. False
  // when there was no such group.
  absl::StatusOr<bool> Delete(MysqlConnection& conn, const std::string& table,
                              const std::string& group) const;

  // Sets the group's floor (one UPDATE). False when there is no such
  // group (deleted meanwhile).
  absl::StatusOr<bool> WriteFloor(MysqlConnection& conn,
                                  const std::string& table,
                                  const std::string& group,
                                  const std::string& floor_gtid) const;

  // Writes a group's exceptions: each of `upserts` inserted or replacing
  // the stored row (its last_error kept when the new one is empty), then
  // the rows of `deletes` deleted, in statements of at most
  // kExceptionsPerStatement rows. Each statement is idempotent; on an error
  // some may have run, and the caller writes the same again.
  static constexpr size_t kExceptionsPerStatement = 500;
  absl::Status WriteExceptions(MysqlConnection& conn, const std::string& table,
                               const std::string& group,
                               const std::vector<GroupExceptionRow>& upserts,
                               const std::vector<std::string>& deletes) const;
  // Every exception of the group (none when the table does not exist).
  absl::StatusOr<std::vector<GroupExceptionRow>> ReadExceptions(
      MysqlConnection& conn, const std::string& table,
      const std::string& group) const;
  // The group's dead messages with id > after_id (byte order of the text
  // form; all when empty), by id, at most `limit`.
  absl::StatusOr<std::vector<GroupExceptionRow>> ListDead(
      MysqlConnection& conn, const std::string& table, const std::string& group,
      const std::string& after_id, int limit) const;

  // The server's binlog position now (@@gtid_binlog_pos, canonical).
  // FAILED_PRECONDITION when the server writes no binary log or has no
  // MariaDB GTID position.
  static absl::StatusOr<std::string> BinlogGtidPosition(MysqlConnection& conn);

 private:
  // FAILED_PRECONDITION with the GRANT for a denied statement; `status`
  // otherwise.
  absl::Status Explain(MysqlConnection& conn, absl::Status status) const;

  const std::string database_;
  const std::string groups_;    // `db`.`msgq_groups`
  const std::string messages_;  // `db`.`msgq_group_messages`
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_MYSQL_GROUP_STORE_H_
