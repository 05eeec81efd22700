// NetnsMariaDb (tests/netns_fixture.h): a private MariaDB inside a
// NetnsLink's namespace.
#include <unistd.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/netns_fixture.h"
#include "tests/test_env.h"
#include "tools/launch/child_process.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif

namespace msgq::testing {

using launch::RunCommand;
using launch::ShellQuote;

// ---- NetnsMariaDb ----

absl::StatusOr<std::unique_ptr<NetnsMariaDb>> NetnsMariaDb::Start(
    const NetnsLink& link, const std::vector<std::string>& extra_args) {
  std::unique_ptr<NetnsMariaDb> db(new NetnsMariaDb());
  db->link_ = &link;
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
      launch::OwnedDir::Create(absl::StrCat(kTempPrefix, "nsdb"));
  if (!dir.ok()) return dir.status();
  db->dir_ = *std::move(dir);
  // The launcher runs inside the namespace: its free-port probe, its
  // mariadbd and its watchdog (which kills mariadbd when this process
  // dies) all do. A later --bind-address wins over the launcher's.
  std::string command = absl::StrCat(
      ShellQuote(absl::StrCat(MSGQ_SOURCE_DIR, "/tools/mariadb-private")),
      " start ", ShellQuote(db->dir_->path()), " --owner-pid=", getpid(),
      " --binlog=on -- --bind-address=", link.inner_address());
  for (const std::string& a : extra_args) {
    absl::StrAppend(&command, " ", ShellQuote(a));
  }
  absl::StatusOr<std::string> out = RunCommand(link.WrapCommand(command));
  if (!out.ok()) return out.status();
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_SOCKET=")) {
      db->socket_ = std::string(line);
    } else if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_PORT=")) {
      (void)absl::SimpleAtoi(line, &db->port_);
    }
  }
  if (db->socket_.empty() || db->port_ == 0) {
    return absl::InternalError(
        absl::StrCat("mariadb-private printed no socket or port: ", *out));
  }
  const std::string user = absl::StrCat("'root'@'", link.host_address(), "'");
  if (absl::Status s = db->Exec(absl::StrCat("CREATE USER ", user)); !s.ok()) {
    return s;
  }
  if (absl::Status s = db->Exec(
          absl::StrCat("GRANT ALL ON *.* TO ", user, " WITH GRANT OPTION"));
      !s.ok()) {
    return s;
  }
  return db;
}

std::string NetnsMariaDb::StopCommand() const {
  return absl::StrCat(
      ShellQuote(absl::StrCat(MSGQ_SOURCE_DIR, "/tools/mariadb-private")),
      " stop ", ShellQuote(dir_->path()), " --kill");
}

NetnsMariaDb::~NetnsMariaDb() {
  conn_.reset();
  // The launcher's stop only signals pids it recorded: it needs no
  // namespace.
  if (dir_ != nullptr) (void)RunCommand(StopCommand());
  dir_.reset();
}

std::vector<std::string> NetnsMariaDb::MsgqdArgs() const {
  return {
      "--mysql_socket=", absl::StrCat("--mysql_host=", link_->inner_address()),
      absl::StrCat("--mysql_port=", port_)};
}

MysqlOptions NetnsMariaDb::socket_options() const {
  MysqlOptions o;
  o.socket = socket_;
  return o;
}

absl::StatusOr<QueryResult> NetnsMariaDb::Query(const std::string& sql) {
  if (conn_ == nullptr || conn_->broken()) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(socket_options());
    if (!conn.ok()) return conn.status();
    conn_ = *std::move(conn);
  }
  return conn_->Query(sql);
}

absl::Status NetnsMariaDb::Exec(const std::string& sql) {
  return Query(sql).status();
}

std::string NetnsMariaDb::Scalar(const std::string& sql) {
  absl::StatusOr<QueryResult> r = Query(sql);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1) return "";
  return r->rows[0][0].value_or("<NULL>");
}

}  // namespace msgq::testing
