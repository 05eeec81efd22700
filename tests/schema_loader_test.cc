// LoadSchema against a real private MariaDB: which databases and tables it
// reports, in which order, with which columns, and that names with quotes
// and backticks are read as data. (LoadSchema takes a MysqlConnection, so
// information_schema rows cannot be fed to it without a server.)
#include "engine/sql/schema_loader.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class SchemaLoaderTest : public MsgqTest {
 protected:
  PrivateMariaDb::Options DbOptions() override { return {.binlog = false}; }

  absl::StatusOr<SchemaSnapshot> Load(const std::vector<std::string>& dbs) {
    auto conn = db_->Connect();
    if (!conn.ok()) return conn.status();
    return LoadSchema(**conn, dbs);
  }
};

std::vector<std::string> Names(const SchemaSnapshot& s) {
  std::vector<std::string> out;
  for (const TableDefinition& t : s.tables) {
    out.push_back(absl::StrCat(t.keyspace, ".", t.name));
  }
  return out;
}

TEST_F(SchemaLoaderTest, ReadsOnlyMessageTablesOfTheConfiguredDatabases) {
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE DATABASE `we'ird`"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE DATABASE other"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=7"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("a``b"));  // named a`b
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE TABLE msgq.plain (id bigint)"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE VIEW msgq.v AS SELECT id, message FROM msgq.q"));
  ASSERT_NO_FATAL_FAILURE(Exec("USE `we'ird`"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl("r", MessageComment())));
  ASSERT_NO_FATAL_FAILURE(Exec("USE other"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl("x", MessageComment())));

  absl::StatusOr<SchemaSnapshot> s = Load({"we'ird", "msgq", "ghost"});
  ASSERT_TRUE(s.ok()) << s.status();
  // Only the databases that exist; "ghost" does not.
  EXPECT_THAT(s->databases, UnorderedElementsAre("msgq", "we'ird"));
  // By database, then name; no plain table, no view, nothing of `other`.
  EXPECT_THAT(Names(*s), ElementsAre("msgq.a`b", "msgq.q", "we'ird.r"));
  const TableDefinition& q = s->tables[1];
  EXPECT_EQ(q.comment, MessageComment("vt_ack_wait=7"));
  // Table order, DATA_TYPE lower case, COLUMN_TYPE as the server says, the
  // character set of text columns (lower case), COLUMN_KEY (lower case: the
  // primary key, the first column of poller_idx).
  EXPECT_THAT(
      q.columns,
      ElementsAre(
          Column{"id", "bigint", "bigint(20)", "", false, "pri"},
          Column{"priority", "tinyint", "tinyint(4)"},
          Column{"epoch", "bigint", "bigint(20)"},
          Column{"time_next", "bigint", "bigint(20)"},
          Column{"time_acked", "bigint", "bigint(20)", "", false, "mul"},
          Column{"message", "longtext", "longtext", "utf8mb4"}));
  EXPECT_EQ(s->tables[0].columns, q.columns);
  EXPECT_EQ(s->tables[2].columns, q.columns);
}

TEST_F(SchemaLoaderTest, ColumnChangesAndEmptyInputs) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "", "time_created bigint UNSIGNED"));
  absl::StatusOr<SchemaSnapshot> before = Load({"msgq"});
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->tables.size(), 1u);
  EXPECT_EQ(before->tables[0].columns[6],
            (Column{"time_created", "bigint", "bigint(20) unsigned"}));
  // A changed column type is a changed definition (the engine's reload
  // replaces the manager on it).
  ASSERT_NO_FATAL_FAILURE(
      Exec("ALTER TABLE msgq.q MODIFY id varchar(64) NOT NULL"));
  absl::StatusOr<SchemaSnapshot> after = Load({"msgq"});
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->tables.size(), 1u);
  EXPECT_EQ(after->tables[0].columns[0],
            (Column{"id", "varchar", "varchar(64)", "utf8mb4", false, "pri"}));
  EXPECT_FALSE(after->tables[0] == before->tables[0]);
  // Generated columns are marked (their row-image values are not used).
  ASSERT_NO_FATAL_FAILURE(
      Exec("ALTER TABLE msgq.q ADD COLUMN v bigint AS (epoch + 1) VIRTUAL, "
           "ADD COLUMN s varchar(8) CHARACTER SET latin1 AS ('x') STORED"));
  absl::StatusOr<SchemaSnapshot> generated = Load({"msgq"});
  ASSERT_TRUE(generated.ok()) << generated.status();
  ASSERT_EQ(generated->tables.size(), 1u);
  ASSERT_EQ(generated->tables[0].columns.size(), 9u);
  EXPECT_EQ(generated->tables[0].columns[7],
            (Column{"v", "bigint", "bigint(20)", "", true}));
  EXPECT_EQ(generated->tables[0].columns[8],
            (Column{"s", "varchar", "varchar(8)", "latin1", true}));

  // No databases: nothing, and no query is needed.
  absl::StatusOr<SchemaSnapshot> none = Load({});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(none->databases, IsEmpty());
  EXPECT_THAT(none->tables, IsEmpty());
  // A database without message tables exists but has no tables.
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE DATABASE empty_db"));
  absl::StatusOr<SchemaSnapshot> empty = Load({"empty_db"});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(empty->databases, ElementsAre("empty_db"));
  EXPECT_THAT(empty->tables, IsEmpty());
}

// A column's key is "pri" only when it is in the index named PRIMARY:
// COLUMN_KEY also says PRI for a UNIQUE NOT NULL id when a table has no
// primary key, and the settling writes would name a PRIMARY index it lacks.
TEST_F(SchemaLoaderTest, OnlyThePrimaryIndexMakesPrimaryKeyColumns) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrReplaceAll(MessageTableDdl("u", MessageComment()),
                               {{"PRIMARY KEY (id)", "UNIQUE KEY (id)"}})));
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrReplaceAll(
      MessageTableDdl("p", MessageComment(),
                      "time_created bigint NOT NULL DEFAULT 0"),
      {{"PRIMARY KEY (id)", "PRIMARY KEY (id, time_created)"}})));
  ASSERT_EQ(
      db_->Scalar("SELECT COLUMN_KEY FROM information_schema.COLUMNS WHERE "
                  "TABLE_SCHEMA = 'msgq' AND TABLE_NAME = 'u' AND "
                  "COLUMN_NAME = 'id'"),
      "PRI");
  absl::StatusOr<SchemaSnapshot> s = Load({"msgq"});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_THAT(Names(*s), ElementsAre("msgq.p", "msgq.u"));
  std::vector<std::string> keys;
  for (const TableDefinition& def : s->tables) {
    for (const Column& c : def.columns) {
      keys.push_back(absl::StrCat(def.name, ".", c.name, "=", c.key));
    }
  }
  EXPECT_THAT(
      keys, ElementsAre("p.id=pri", "p.priority=", "p.epoch=", "p.time_next=",
                        "p.time_acked=mul", "p.message=", "p.time_created=pri",
                        "u.id=uni", "u.priority=", "u.epoch=", "u.time_next=",
                        "u.time_acked=mul", "u.message="));
}

}  // namespace
}  // namespace msgq::testing
