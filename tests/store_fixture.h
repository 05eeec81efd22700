// StoreSqlTest: a MsgqTest (private MariaDB, no binlog) that builds a
// MysqlMessageStore for a table of `msgq` and reads back the statements
// that reached the server from its general log.
#ifndef MSGQ_TESTS_STORE_FIXTURE_H_
#define MSGQ_TESTS_STORE_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/schema_loader.h"
#include "tests/fixture.h"

namespace msgq::testing {

class StoreSqlTest : public MsgqTest {
 protected:
  PrivateMariaDb::Options DbOptions() override { return {.binlog = false}; }

  // The store of msgq.`name` (a test failure and null when it has none).
  std::unique_ptr<MysqlMessageStore> Store(const std::string& name,
                                           ReadLimits limits = {}) {
    auto conn = db_->Connect();
    if (!conn.ok()) {
      ADD_FAILURE() << conn.status();
      return nullptr;
    }
    absl::StatusOr<SchemaSnapshot> schema = LoadSchema(**conn, {"msgq"});
    if (!schema.ok()) {
      ADD_FAILURE() << schema.status();
      return nullptr;
    }
    for (const TableDefinition& def : schema->tables) {
      if (def.name != name) continue;
      absl::StatusOr<MessageTable> table =
          BuildMessageTable(def.keyspace, def.name, def.comment, def.columns);
      if (!table.ok()) {
        ADD_FAILURE() << table.status();
        return nullptr;
      }
      return std::make_unique<MysqlMessageStore>(
          *std::move(table), db_->mysql_options(), nullptr, limits);
    }
    ADD_FAILURE() << "no message table " << name;
    return nullptr;
  }

  // Starts logging every statement to mysql.general_log.
  void StartLog() {
    ASSERT_NO_FATAL_FAILURE(Exec("TRUNCATE TABLE mysql.general_log"));
    ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL log_output = 'TABLE'"));
    ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL general_log = 1"));
  }
  // Stops logging; the statements logged that name `table`, or any
  // statement that contains `also` when it is not empty, in order.
  std::vector<std::string> StopLog(const std::string& table,
                                   const std::string& also = "") {
    EXPECT_TRUE(db_->Exec("SET GLOBAL general_log = 0").ok());
    std::string where = absl::StrCat("argument LIKE '%`msgq`.`", table, "`%'");
    if (!also.empty())
      absl::StrAppend(&where, " OR argument LIKE '%", also, "%'");
    auto r = db_->Query(absl::StrCat(
        "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log "
        "WHERE command_type = 'Query' AND (",
        where, ") ORDER BY event_time"));
    std::vector<std::string> out;
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return out;
    }
    for (const auto& row : r->rows) out.push_back(row[0].value_or("NULL"));
    return out;
  }
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_STORE_FIXTURE_H_
