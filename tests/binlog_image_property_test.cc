// Row images against a real private MariaDB: for every column type msgq
// renders from the binlog (engine/binlog/row_image_text.h) and 300 rows of
// random values (fixed seed, boundaries and NULLs mixed in), the
// RowChange::row a BinlogWatcher hands over equals, byte for byte, what a
// text-protocol SELECT of the same row returns on a MysqlConnection
// (utf8mb4, as msgqd reads). Also which tables are judged not reproducible,
// and which updates are rendered.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "engine/binlog/binlog_watcher.h"
#include "engine/binlog/bookkeeping_columns.h"
#include "engine/message_table.h"
#include "engine/sql/schema_loader.h"
#include "gmock/gmock.h"
#include "tests/binlog_image_values.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using image_values::InsertSql;
using image_values::Modes;
using image_values::Rng;
using image_values::SpecDdl;
using image_values::Specs;
using image_values::Text;
using ::testing::IsEmpty;

constexpr uint64_t kSeed = 20240611;  // MSGQ_TEST_SEED=N runs another
constexpr int kRows = 300;

// Records every row change of msgq.t.
class ImageListener : public BinlogWatcher::Listener {
 public:
  explicit ImageListener(BookkeepingColumns columns)
      : columns_(std::move(columns)) {}
  std::optional<BookkeepingColumns> Columns(const std::string& db,
                                            const std::string& table) override {
    if (db != "msgq" || table != "t") return std::nullopt;
    return columns_;
  }
  void OnRowChanges(const std::string&, const std::string&,
                    std::vector<RowChange> changes) override {
    absl::MutexLock lock(&mu_);
    for (RowChange& c : changes) changes_.push_back(std::move(c));
  }
  void OnStreaming(bool, const std::string&) override {}
  std::vector<RowChange> changes() const {
    absl::MutexLock lock(&mu_);
    return changes_;
  }

 private:
  const BookkeepingColumns columns_;
  mutable absl::Mutex mu_;
  std::vector<RowChange> changes_ ABSL_GUARDED_BY(mu_);
};

using Cell = std::optional<std::string>;  // nullopt for NULL

std::vector<Cell> Cells(const PackedRow& row) {
  std::vector<Cell> out;
  size_t at = 0;
  for (int64_t len : row.lengths) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(len, 0));
    const size_t from = std::min(at, row.values.size());
    out.push_back(len < 0 ? Cell() : Cell(row.values.substr(from, n)));
    at += n;
  }
  return out;
}

std::string Show(const Cell& c) {
  if (!c.has_value()) return "NULL";
  return absl::StrCat(
      "\"", absl::CHexEscape(c->substr(0, 96)), "\"",
      c->size() > 96 ? absl::StrCat("... (", c->size(), " bytes)") : "");
}

// One line per column where the rendered row differs from the selected one.
std::vector<std::string> Differences(const std::vector<Column>& streamed,
                                     const PackedRow& selected,
                                     const PackedRow& rendered) {
  const std::vector<Cell> want = Cells(selected), got = Cells(rendered);
  std::vector<std::string> out;
  if (got.size() != want.size()) {
    out.push_back(absl::StrCat(got.size(), " columns, not ", want.size()));
  }
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (want[i] == got[i]) continue;
    out.push_back(absl::StrCat(streamed[i].name, " ", streamed[i].column_type,
                               ": SELECT ", Show(want[i]), ", rendered ",
                               Show(got[i])));
  }
  return out;
}

class BinlogImageTest : public MsgqTest {
 protected:
  absl::StatusOr<std::map<std::string, MessageTable>> LoadTables() {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn = db_->Connect();
    if (!conn.ok()) return conn.status();
    absl::StatusOr<SchemaSnapshot> schema = LoadSchema(**conn, {"msgq"});
    if (!schema.ok()) return schema.status();
    std::map<std::string, MessageTable> out;
    for (TableDefinition& d : schema->tables) {
      absl::StatusOr<MessageTable> t =
          BuildMessageTable(d.keyspace, d.name, d.comment, d.columns);
      if (!t.ok()) return t.status();
      out.emplace(d.name, *std::move(t));
    }
    return out;
  }

  // msgq.t's streamed columns by id, as a SELECT on a fresh MysqlConnection
  // returns them.
  absl::StatusOr<std::map<std::string, PackedRow>> SelectRows(
      const MessageTable& table) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(db_->mysql_options());
    if (!conn.ok()) return conn.status();
    std::vector<std::string> names;
    for (const Column& c : table.streamed) names.push_back("`" + c.name + "`");
    std::map<std::string, PackedRow> rows;
    absl::Status s = (*conn)->ForEachRow(
        absl::StrCat("SELECT ", absl::StrJoin(names, ", "), " FROM msgq.t"),
        [&](char** values, unsigned long* lengths, unsigned n) {
          PackedRow row;
          for (unsigned i = 0; i < n; ++i) {
            row.lengths.push_back(
                values[i] == nullptr ? -1 : static_cast<int64_t>(lengths[i]));
            if (values[i] != nullptr) row.values.append(values[i], lengths[i]);
          }
          rows[std::string(values[0], lengths[0])] = std::move(row);
        });
    if (!s.ok()) return s;
    return rows;
  }

  // Creates msgq.t with a column of every Spec and follows the binlog with
  // table_'s BookkeepingOf(.., true), which must render every column.
  void StartWatching(uint32_t server_id) {
    ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", SpecDdl()));
    absl::StatusOr<std::map<std::string, MessageTable>> tables = LoadTables();
    ASSERT_TRUE(tables.ok()) << tables.status();
    table_ = tables->at("t");
    ASSERT_EQ(table_.streamed.size(), Specs().size() + 2);  // id, message
    const BookkeepingColumns cols = BookkeepingOf(table_, true);
    ASSERT_EQ(cols.streamed.size(), table_.streamed.size());
    listener_ = std::make_unique<ImageListener>(cols);
    BinlogWatcher::Options options;
    options.mysql = db_->mysql_options();
    options.server_id = server_id;
    watcher_ = std::make_unique<BinlogWatcher>(options, listener_.get());
    watcher_->Start();
    ASSERT_TRUE(Eventually([&] { return watcher_->status().streaming; },
                           absl::Seconds(10)));
    const std::string mode = db_->Scalar("SELECT @@SESSION.sql_mode");
    modes_ = {.zero_date = !absl::StrContains(mode, "NO_ZERO_DATE"),
              .zero_in_date = !absl::StrContains(mode, "NO_ZERO_IN_DATE")};
  }

  MessageTable table_;
  Modes modes_;
  std::unique_ptr<ImageListener> listener_;
  std::unique_ptr<BinlogWatcher> watcher_;  // declared last: stops first
};

TEST_F(BinlogImageTest, RenderedRowsEqualSelectForEveryType) {
  uint64_t seed = kSeed;
  const char* env = std::getenv("MSGQ_TEST_SEED");
  if (env != nullptr) ASSERT_TRUE(absl::SimpleAtoi(env, &seed)) << env;
  std::cout << "seed " << seed << "\n";
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  ASSERT_NO_FATAL_FAILURE(StartWatching(5171));
  Rng rng(seed);
  for (int from = 1; from <= kRows; from += 20) {
    ASSERT_NO_FATAL_FAILURE(Exec(InsertSql(rng, modes_, from, from + 19)));
  }
  ASSERT_TRUE(Eventually([&] { return listener_->changes().size() >= kRows; },
                         absl::Seconds(60)))
      << listener_->changes().size() << " of " << kRows << " changes";
  watcher_->Stop();
  absl::StatusOr<std::map<std::string, PackedRow>> selected =
      SelectRows(table_);
  ASSERT_TRUE(selected.ok()) << selected.status();
  ASSERT_EQ(selected->size(), static_cast<size_t>(kRows));
  std::map<std::string, RowChange> changes;
  for (RowChange& c : listener_->changes()) changes[c.id] = std::move(c);
  EXPECT_EQ(changes.size(), static_cast<size_t>(kRows));
  std::vector<std::string> problems;
  for (const auto& [id, row] : *selected) {
    const auto it = changes.find(id);
    if (it == changes.end()) {
      problems.push_back(absl::StrCat("id ", id, ": no change"));
    } else if (it->second.row == nullptr) {
      // With its values when it is the first problem: which was refused?
      std::string values;
      const std::vector<Cell> cells = Cells(row);
      for (size_t i = 0; problems.empty() && i < cells.size(); ++i) {
        absl::StrAppend(&values, i == 0 ? "; SELECT: " : ", ",
                        table_.streamed[i].name, " ",
                        table_.streamed[i].column_type, "=", Show(cells[i]));
      }
      problems.push_back(absl::StrCat("id ", id, ": not rendered", values));
    } else {
      for (const std::string& d :
           Differences(table_.streamed, row, *it->second.row)) {
        problems.push_back(absl::StrCat("id ", id, ": ", d));
      }
    }
  }
  const size_t total = problems.size();
  problems.resize(std::min<size_t>(total, 10));
  EXPECT_EQ(total, 0u) << "first " << problems.size() << ":\n"
                       << absl::StrJoin(problems, "\n");
}

// One streamed column without a reproducible text form: rows are read back.
TEST_F(BinlogImageTest, TablesWithAnUnrenderableStreamedColumnAreReadBack) {
  const std::vector<std::string> types = {"FLOAT",
                                          "DOUBLE",
                                          "TIMESTAMP NULL",
                                          "CHAR(3)",
                                          "BINARY(3)",
                                          "ENUM('a','b')",
                                          "SET('a','b')",
                                          "BIT(3)",
                                          "INT ZEROFILL",
                                          "VARCHAR(10) CHARACTER SET latin1",
                                          "TEXT CHARACTER SET latin1",
                                          "BIGINT AS (id + 1) VIRTUAL",
                                          "UUID",
                                          "INET6",
                                          "POINT"};
  for (size_t i = 0; i < types.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(
        CreateTable(absl::StrCat("u", i), "", "c " + types[i]));
  }
  // Not streamed, so not in the way; and only renderable columns.
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("skip", "vt_message_cols=id|message", "c FLOAT"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("ok", "", "c INT, d VARCHAR(10)"));
  absl::StatusOr<std::map<std::string, MessageTable>> tables = LoadTables();
  ASSERT_TRUE(tables.ok()) << tables.status();
  for (size_t i = 0; i < types.size(); ++i) {
    const MessageTable& t = tables->at(absl::StrCat("u", i));
    ASSERT_EQ(t.streamed.size(), 3u) << types[i];  // id, message, c
    EXPECT_EQ(TextFormOf(t.streamed[2]), binlog::TextForm::kNone) << types[i];
    EXPECT_THAT(BookkeepingOf(t, true).streamed, IsEmpty()) << types[i];
  }
  EXPECT_EQ(BookkeepingOf(tables->at("skip"), true).streamed.size(), 2u);
  EXPECT_EQ(BookkeepingOf(tables->at("ok"), true).streamed.size(), 4u);
  EXPECT_THAT(BookkeepingOf(tables->at("ok"), false).streamed, IsEmpty());
}

// msgq's own postpones (epoch raised) and acks are not rendered; another
// update of a due row is, and equals the row read back.
TEST_F(BinlogImageTest, OnlyUpdatesThatKeepTheEpochAreRendered) {
  ASSERT_NO_FATAL_FAILURE(StartWatching(5172));
  Rng rng(kSeed);
  const std::vector<std::string> statements = {
      InsertSql(rng, modes_, 1, 1),
      "UPDATE msgq.t SET epoch = epoch + 1, time_next = 2000 WHERE id = 1",
      "UPDATE msgq.t SET message = " + Text("{\"m\": \"é😀\"}") +
          " WHERE id = 1",
      "UPDATE msgq.t SET time_acked = 3000 WHERE id = 1"};
  for (size_t i = 0; i < statements.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(Exec(statements[i]));
    ASSERT_TRUE(Eventually([&] { return listener_->changes().size() > i; },
                           absl::Seconds(10)))
        << statements[i];
  }
  watcher_->Stop();
  const std::vector<RowChange> c = listener_->changes();
  ASSERT_EQ(c.size(), 4u);
  EXPECT_NE(c[0].row, nullptr);
  EXPECT_EQ(c[1].row, nullptr);
  EXPECT_EQ(c[1].time_next, 2000);
  ASSERT_NE(c[2].row, nullptr);
  EXPECT_EQ(c[2].epoch, 1);
  EXPECT_EQ(c[3].row, nullptr);
  EXPECT_TRUE(c[3].newly_acked);
  absl::StatusOr<std::map<std::string, PackedRow>> selected =
      SelectRows(table_);
  ASSERT_TRUE(selected.ok()) << selected.status();
  ASSERT_EQ(selected->count("1"), 1u);
  EXPECT_THAT(Differences(table_.streamed, selected->at("1"), *c[2].row),
              IsEmpty());
  EXPECT_EQ(Cells(*c[2].row)[1], "{\"m\": \"é😀\"}");
}

}  // namespace
}  // namespace msgq::testing
