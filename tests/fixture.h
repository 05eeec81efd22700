// MsgqTest: a gtest fixture with a MariaDB of the test's own (borrowed from
// the test run's pool unless PrivateServer(); database `msgq` created) and
// helpers to start msgqd against it.
//
// The helpers fail with gtest fatal failures, which only leave the helper:
// call them as ASSERT_NO_FATAL_FAILURE(StartServer()) so a failed one ends
// the test instead of letting it go on with a null stub_.
#ifndef MSGQ_TESTS_FIXTURE_H_
#define MSGQ_TESTS_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_env.h"

namespace msgq::testing {

class MsgqTest : public ::testing::Test {
 protected:
  // The server's options; any extra_args or env make it a private one.
  virtual PrivateMariaDb::Options DbOptions() { return {}; }
  // The test borrows a MariaDB from the pool of the ctest run
  // (PrivateMariaDb::Options::shared): it is the test's alone, looks freshly
  // started and is killed rather than given back when the test changed it.
  // A fixture returns true here when its tests need a server started for
  // them: they read what a server's history shows (its uptime, mariadbd.err,
  // status counters, connection or table ids), or rely on it dying with the
  // test process.
  virtual bool PrivateServer() { return false; }

  void SetUp() override {
    PrivateMariaDb::Options options = DbOptions();
    options.shared = !PrivateServer();
    auto db = PrivateMariaDb::Start(std::move(options));
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    absl::Status s = db_->Exec("CREATE DATABASE msgq");
    ASSERT_TRUE(s.ok()) << s;
  }

  // Starts msgqd serving `msgq` (unless --databases is given) with a short
  // schema reload interval; `env` (NAME=VALUE) is added to its environment.
  void StartServer(std::vector<std::string> args = {},
                   const std::vector<std::string>& env = {}) {
    bool has_db = false, has_reload = false;
    for (const auto& a : args) {
      has_db |= a.rfind("--databases=", 0) == 0;
      has_reload |= a.rfind("--schema_reload_interval=", 0) == 0;
    }
    if (!has_db) args.push_back("--databases=msgq");
    if (!has_reload) args.push_back("--schema_reload_interval=200ms");
    auto server = Msgqd::Start(*db_, args, env);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = server_->Stub();
  }

  void Exec(const std::string& sql) {
    absl::Status s = db_->Exec(sql);
    ASSERT_TRUE(s.ok()) << sql << ": " << s;
  }

  void CreateTable(const std::string& name, const std::string& overrides = "",
                   const std::string& extra_columns = "") {
    ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
    ASSERT_NO_FATAL_FAILURE(
        Exec(MessageTableDdl(name, MessageComment(overrides), extra_columns)));
  }

  // Inserts ids [from, to] into msgq.`table` with message {"n": id}.
  void InsertRange(const std::string& table, int from, int to) {
    std::string sql = "INSERT INTO msgq.`" + table + "` (id, message) VALUES ";
    for (int i = from; i <= to; ++i) {
      if (i > from) sql += ",";
      sql +=
          "(" + std::to_string(i) + ", '{\"n\": " + std::to_string(i) + "}')";
    }
    Exec(sql);
  }

  // Waits until msgqd follows the binlog for `table` (ListTables says so).
  void WaitForBinlog(const std::string& table) {
    ASSERT_TRUE(Eventually(
        [&] { return FindTable(stub_.get(), table).discovery() == "binlog"; },
        absl::Seconds(10)))
        << server_->Log();
  }

  std::unique_ptr<PrivateMariaDb> db_;
  std::unique_ptr<Msgqd> server_;
  std::unique_ptr<v1::Messaging::Stub> stub_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_FIXTURE_H_
