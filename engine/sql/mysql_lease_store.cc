#include "engine/sql/mysql_lease_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace msgq {
namespace {

// Now on MySQL's clock, Unix ns (NOW(6) is fixed for one statement).
constexpr char kNow[] = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)";

int64_t ToInt(const std::optional<std::string>& v) {
  int64_t out = 0;
  if (v.has_value() && !absl::SimpleAtoi(*v, &out)) out = 0;
  return out;
}

}  // namespace

MysqlLeaseStore::MysqlLeaseStore(MysqlOptions options, std::string database)
    : options_(std::move(options)),
      leases_(absl::StrCat(QuoteIdentifier(database), ".",
                           QuoteIdentifier("msgq_leases"))),
      instances_(absl::StrCat(QuoteIdentifier(database), ".",
                              QuoteIdentifier("msgq_instances"))) {}

absl::StatusOr<MysqlConnection*> MysqlLeaseStore::Conn() {
  if (conn_ != nullptr && !conn_->broken()) return conn_.get();
  conn_.reset();
  absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
      MysqlConnection::Connect(options_);
  if (!c.ok()) return c.status();
  if (absl::StatusOr<uint64_t> tz = (*c)->Execute("SET time_zone = '+00:00'");
      !tz.ok()) {
    return tz.status();
  }
  conn_ = *std::move(c);
  return conn_.get();
}

absl::StatusOr<uint64_t> MysqlLeaseStore::Execute(const std::string& sql) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  return (*c)->Execute(sql);
}

absl::StatusOr<QueryResult> MysqlLeaseStore::Query(const std::string& sql) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  return (*c)->Query(sql);
}

absl::Status MysqlLeaseStore::Prepare() {
  absl::StatusOr<uint64_t> r = Execute(absl::StrCat(
      "CREATE TABLE IF NOT EXISTS ", leases_,
      " (name VARCHAR(192) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
      " PRIMARY KEY, owner VARCHAR(255) NOT NULL DEFAULT '',"
      " since BIGINT NOT NULL DEFAULT 0, expires BIGINT NOT NULL DEFAULT 0)"
      " ENGINE=InnoDB COMMENT 'msgq: which msgqd sends each message table'"));
  if (!r.ok()) return r.status();
  r = Execute(absl::StrCat(
      "CREATE TABLE IF NOT EXISTS ", instances_,
      " (instance VARCHAR(255) NOT NULL PRIMARY KEY,"
      " address VARCHAR(255) NOT NULL DEFAULT '',"
      " started BIGINT NOT NULL DEFAULT 0, expires BIGINT NOT NULL DEFAULT 0)"
      " ENGINE=InnoDB COMMENT 'msgq: live msgqd instances'"));
  return r.status();
}

absl::StatusOr<LeaseView> MysqlLeaseStore::Renew(const std::string& self,
                                                 const std::string& address,
                                                 absl::Duration lease) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  const std::string me = (*c)->QuoteString(self);
  const int64_t ns = absl::ToInt64Nanoseconds(lease);
  absl::StatusOr<uint64_t> r = Execute(absl::StrCat(
      "INSERT INTO ", instances_, " (instance, address, started, expires)",
      " VALUES (", me, ", ", (*c)->QuoteString(address), ", ", kNow, ", ", kNow,
      " + ", ns, ") ON DUPLICATE KEY UPDATE expires = VALUES(expires),",
      " address = VALUES(address)"));
  if (!r.ok()) return r.status();
  r = Execute(absl::StrCat("UPDATE ", leases_, " SET expires = ", kNow, " + ",
                           ns, " WHERE owner = ", me, " AND expires > ", kNow));
  if (!r.ok()) return r.status();
  absl::StatusOr<QueryResult> rows = Query(absl::StrCat(
      "SELECT name, owner, since, expires, ", kNow, " FROM ", leases_));
  if (!rows.ok()) return rows.status();
  LeaseView view;
  for (const auto& row : rows->rows) {
    view.leases.push_back(LeaseRow{row[0].value_or(""), row[1].value_or(""),
                                   ToInt(row[2]), ToInt(row[3])});
    view.now = ToInt(row[4]);
  }
  // Every heartbeat row, read without locks: alive is decided here, and
  // rows gone for an hour are deleted by key below, so no instance's
  // renewal ever waits on another instance's heartbeat row (a scanning
  // DELETE would lock them all).
  absl::StatusOr<QueryResult> instances =
      Query(absl::StrCat("SELECT instance, expires, ", kNow, " FROM ",
                         instances_, " ORDER BY instance"));
  if (!instances.ok()) return instances.status();
  constexpr int64_t kForgetAfter = int64_t{3600} * 1000 * 1000 * 1000;
  std::vector<std::string> gone;
  for (const auto& row : instances->rows) {
    view.now = ToInt(row[2]);
    const int64_t expires = ToInt(row[1]);
    if (expires > view.now) {
      view.alive.push_back(row[0].value_or(""));
    } else if (expires < view.now - kForgetAfter) {
      gone.push_back((*c)->QuoteString(row[0].value_or("")));
    }
  }
  if (!gone.empty()) {
    r = Execute(absl::StrCat("DELETE FROM ", instances_, " WHERE instance IN (",
                             absl::StrJoin(gone, ", "), ") AND expires < ",
                             kNow, " - ", kForgetAfter));
    if (!r.ok()) return r.status();
  }
  return view;
}

absl::StatusOr<bool> MysqlLeaseStore::Take(const std::string& table,
                                           const std::string& self,
                                           absl::Duration lease) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  const std::string name = (*c)->QuoteString(table);
  absl::StatusOr<uint64_t> r = Execute(absl::StrCat(
      "INSERT IGNORE INTO ", leases_, " (name, owner, since, expires) VALUES (",
      name, ", '', 0, 0)"));
  if (!r.ok()) return r.status();
  r = Execute(
      absl::StrCat("UPDATE ", leases_, " SET owner = ", (*c)->QuoteString(self),
                   ", since = ", kNow, ", expires = ", kNow, " + ",
                   absl::ToInt64Nanoseconds(lease), " WHERE name = ", name,
                   " AND (owner = '' OR expires <= ", kNow, ")"));
  if (!r.ok()) return r.status();
  return *r == 1;
}

absl::Status MysqlLeaseStore::Release(const std::vector<std::string>& tables,
                                      const std::string& self) {
  if (tables.empty()) return absl::OkStatus();
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  std::vector<std::string> names;
  for (const std::string& t : tables) names.push_back((*c)->QuoteString(t));
  return Execute(absl::StrCat(
                     "UPDATE ", leases_, " SET owner = '', expires = ", kNow,
                     " WHERE owner = ", (*c)->QuoteString(self),
                     " AND name IN (", absl::StrJoin(names, ", "), ")"))
      .status();
}

absl::Status MysqlLeaseStore::Leave(const std::string& self) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  const std::string me = (*c)->QuoteString(self);
  absl::StatusOr<uint64_t> r = Execute(
      absl::StrCat("UPDATE ", leases_, " SET owner = '', expires = ", kNow,
                   " WHERE owner = ", me));
  if (!r.ok()) return r.status();
  return Execute(
             absl::StrCat("DELETE FROM ", instances_, " WHERE instance = ", me))
      .status();
}

}  // namespace msgq
