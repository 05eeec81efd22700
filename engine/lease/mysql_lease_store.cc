#include "engine/lease/mysql_lease_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/lease/lease_retry.h"

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
      database_(database),
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
  return RetryAborted([&]() -> absl::StatusOr<uint64_t> {
    absl::StatusOr<MysqlConnection*> c = Conn();
    if (!c.ok()) return c.status();
    return (*c)->Execute(sql);
  });
}

absl::StatusOr<QueryResult> MysqlLeaseStore::Query(const std::string& sql) {
  return RetryAborted([&]() -> absl::StatusOr<QueryResult> {
    absl::StatusOr<MysqlConnection*> c = Conn();
    if (!c.ok()) return c.status();
    return (*c)->Query(sql);
  });
}

absl::Status MysqlLeaseStore::Prepare() {
  // Tables created beforehand by an administrator need no CREATE grant
  // (CREATE TABLE IF NOT EXISTS asks for it even when they exist).
  auto create = [this](const std::string& table, const std::string& ddl) {
    absl::StatusOr<QueryResult> exists =
        Query(absl::StrCat("SELECT 1 FROM ", table, " LIMIT 0"));
    if (exists.ok() || exists.status().code() != absl::StatusCode::kNotFound) {
      return exists.status();
    }
    return Execute(absl::StrCat("CREATE TABLE IF NOT EXISTS ", table, ddl))
        .status();
  };
  absl::Status s = create(
      leases_,
      " (name VARCHAR(192) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
      " PRIMARY KEY, owner VARCHAR(255) NOT NULL DEFAULT '',"
      " since BIGINT NOT NULL DEFAULT 0, expires BIGINT NOT NULL DEFAULT 0)"
      " ENGINE=InnoDB COMMENT 'msgq: which msgqd sends each message table'");
  if (!s.ok()) return s;
  return create(
      instances_,
      " (instance VARCHAR(255) NOT NULL PRIMARY KEY,"
      " address VARCHAR(255) NOT NULL DEFAULT '',"
      " started BIGINT NOT NULL DEFAULT 0, expires BIGINT NOT NULL DEFAULT 0)"
      " ENGINE=InnoDB COMMENT 'msgq: live msgqd instances'");
}

std::string MysqlLeaseStore::GrantStatements(const std::string& database,
                                             const std::string& user) {
  const size_t at = user.rfind('@');
  const std::string account = at == std::string::npos
                                  ? absl::StrCat("'", user, "'")
                                  : absl::StrCat("'", user.substr(0, at), "'@'",
                                                 user.substr(at + 1), "'");
  std::string out;
  for (const char* table : {"msgq_leases", "msgq_instances"}) {
    absl::StrAppend(&out, out.empty() ? "" : " ",
                    "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON ",
                    QuoteIdentifier(database), ".", table, " TO ", account,
                    ";");
  }
  return out;
}

absl::Status MysqlLeaseStore::CheckTable(const std::string& table,
                                         const std::string& row) {
  for (const std::string& sql :
       {absl::StrCat("SELECT * FROM ", table, " WHERE 1 = 0"),
        absl::StrCat("INSERT INTO ", table, " SELECT ", row, " FROM DUAL",
                     " WHERE 1 = 0"),
        absl::StrCat("UPDATE ", table, " SET expires = expires WHERE 1 = 0"),
        absl::StrCat("DELETE FROM ", table, " WHERE 1 = 0")}) {
    absl::StatusOr<QueryResult> r = Query(sql);
    if (!r.ok()) return r.status();
  }
  return absl::OkStatus();
}

absl::Status MysqlLeaseStore::Check() {
  absl::Status s = Prepare();
  if (s.ok()) s = CheckTable(leases_, "'', '', 0, 0");
  if (s.ok()) s = CheckTable(instances_, "'', '', 0, 0");
  if (s.ok() || msgq::IsUnavailable(s) ||
      s.code() == absl::StatusCode::kAborted) {
    return s;
  }
  std::string user = options_.user;
  if (absl::StatusOr<QueryResult> who = Query("SELECT CURRENT_USER()");
      who.ok() && who->rows.size() == 1 && who->rows[0][0].has_value()) {
    user = *who->rows[0][0];
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "msgqd shares its tables with other msgqd by lease rows (--leases, "
      "the default), but MySQL refuses them: ",
      s.message(), ". Either grant them: ", GrantStatements(database_, user),
      " or, for a deployment that runs a single msgqd, start it with "
      "--leases=false"));
}

absl::StatusOr<LeaseView> MysqlLeaseStore::Renew(const std::string& self,
                                                 const std::string& address,
                                                 absl::Duration lease) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  const std::string me = (*c)->QuoteString(self);
  const int64_t ns = absl::ToInt64Nanoseconds(lease);
  // `expires` of an existing row is the row's (ON DUPLICATE KEY UPDATE).
  absl::StatusOr<uint64_t> r = Execute(absl::StrCat(
      "INSERT INTO ", instances_, " (instance, address, started, expires)",
      " VALUES (", me, ", ", (*c)->QuoteString(address), ", ", kNow, ", ", kNow,
      " + ", ns, ") ON DUPLICATE KEY UPDATE",
      " expires = GREATEST(VALUES(expires), expires + 1),",
      " address = VALUES(address)"));
  if (!r.ok()) return r.status();
  // No condition on the expiry: a row under this id is this process's or
  // its predecessor's (lease_keeper.h), and a taker's UPDATE names the
  // version it read, which this one changes.
  r = Execute(absl::StrCat("UPDATE ", leases_, " SET expires = GREATEST(", kNow,
                           " + ", ns, ", expires + 1) WHERE owner = ", me));
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
  // Every heartbeat row, read without locks: rows gone for an hour are
  // deleted by key below, so no instance's renewal ever waits on another
  // instance's heartbeat row (a scanning DELETE would lock them all).
  absl::StatusOr<QueryResult> instances =
      Query(absl::StrCat("SELECT instance, expires, ", kNow, " FROM ",
                         instances_, " ORDER BY instance"));
  if (!instances.ok()) return instances.status();
  constexpr int64_t kForgetAfter = int64_t{3600} * 1000 * 1000 * 1000;
  std::vector<std::string> gone;
  for (const auto& row : instances->rows) {
    view.now = ToInt(row[2]);
    const int64_t expires = ToInt(row[1]);
    if (expires < view.now - kForgetAfter) {
      gone.push_back((*c)->QuoteString(row[0].value_or("")));
    } else {
      view.instances.push_back(InstanceRow{row[0].value_or(""), expires});
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
                                           absl::Duration lease,
                                           const std::string& owner,
                                           int64_t version) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  const std::string name = (*c)->QuoteString(table);
  absl::StatusOr<uint64_t> r;
  if (owner.empty() && version == 0) {
    // No row was read (or one never held): the row to take.
    r = Execute(absl::StrCat("INSERT IGNORE INTO ", leases_,
                             " (name, owner, since, expires) VALUES (", name,
                             ", '', 0, 0)"));
    if (!r.ok()) return r.status();
  }
  r = Execute(absl::StrCat(
      "UPDATE ", leases_, " SET owner = ", (*c)->QuoteString(self),
      ", since = ", kNow, ", expires = GREATEST(", kNow, " + ",
      absl::ToInt64Nanoseconds(lease), ", expires + 1) WHERE name = ", name,
      " AND owner = ", (*c)->QuoteString(owner), " AND expires = ", version));
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
  return Execute(absl::StrCat("UPDATE ", leases_,
                              " SET owner = '', expires = expires + 1",
                              " WHERE owner = ", (*c)->QuoteString(self),
                              " AND name IN (", absl::StrJoin(names, ", "),
                              ")"))
      .status();
}

absl::Status MysqlLeaseStore::Leave(const std::string& self) {
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  const std::string me = (*c)->QuoteString(self);
  absl::StatusOr<uint64_t> r = Execute(
      absl::StrCat("UPDATE ", leases_, " SET owner = '', expires = expires + 1",
                   " WHERE owner = ", me));
  if (!r.ok()) return r.status();
  return Execute(
             absl::StrCat("DELETE FROM ", instances_, " WHERE instance = ", me))
      .status();
}

// ---- MysqlLockStore ----

MysqlLockStore::MysqlLockStore(MysqlOptions options,
                               absl::Duration idle_timeout)
    : options_(std::move(options)), idle_timeout_(idle_timeout) {}

absl::StatusOr<MysqlConnection*> MysqlLockStore::Conn() {
  if (conn_ != nullptr && !conn_->broken()) return conn_.get();
  conn_.reset();
  connection_id_ = 0;
  absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
      MysqlConnection::Connect(options_);
  if (!c.ok()) return c.status();
  const int64_t seconds = std::max<int64_t>(
      1, absl::ToInt64Seconds(absl::Ceil(idle_timeout_, absl::Seconds(1))));
  if (absl::StatusOr<uint64_t> set =
          (*c)->Execute(absl::StrCat("SET SESSION wait_timeout = ", seconds));
      !set.ok()) {
    return set.status();
  }
  absl::StatusOr<QueryResult> id = (*c)->Query("SELECT CONNECTION_ID()");
  if (!id.ok()) return id.status();
  if (id->rows.size() == 1) connection_id_ = ToInt(id->rows[0][0]);
  conn_ = *std::move(c);
  return conn_.get();
}

absl::StatusOr<std::vector<MysqlLockStore::Holder>> MysqlLockStore::Hold(
    const std::vector<std::string>& names) {
  std::vector<Holder> out(names.size());
  if (names.empty()) return out;
  absl::StatusOr<MysqlConnection*> c = Conn();
  if (!c.ok()) return c.status();
  std::vector<std::string> quoted;
  for (const std::string& n : names) quoted.push_back((*c)->QuoteString(n));
  // Who holds each lock; then take the free ones; then who holds those
  // that another session took in between.
  auto holders = [&]() -> absl::Status {
    std::vector<std::string> calls;
    for (const std::string& q : quoted) {
      calls.push_back(absl::StrCat("IS_USED_LOCK(", q, ")"));
    }
    absl::StatusOr<QueryResult> r =
        (*c)->Query(absl::StrCat("SELECT ", absl::StrJoin(calls, ", ")));
    if (!r.ok()) return r.status();
    if (r->rows.size() != 1 || r->rows[0].size() != names.size()) {
      return absl::InternalError("IS_USED_LOCK: unexpected result");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      out[i].connection = ToInt(r->rows[0][i]);
      out[i].mine = out[i].connection == connection_id_;
    }
    return absl::OkStatus();
  };
  if (absl::Status s = holders(); !s.ok()) return s;
  std::vector<std::string> take;
  for (size_t i = 0; i < names.size(); ++i) {
    if (out[i].connection == 0) {
      take.push_back(absl::StrCat("GET_LOCK(", quoted[i], ", 0)"));
    }
  }
  if (!take.empty()) {
    absl::StatusOr<QueryResult> r =
        (*c)->Query(absl::StrCat("SELECT ", absl::StrJoin(take, ", ")));
    if (!r.ok()) return r.status();
    if (absl::Status s = holders(); !s.ok()) return s;
  }
  std::vector<std::string> others;
  for (const Holder& h : out) {
    if (!h.mine && h.connection != 0) {
      others.push_back(absl::StrCat(h.connection));
    }
  }
  if (others.empty()) return out;
  absl::StatusOr<QueryResult> hosts = (*c)->Query(absl::StrCat(
      "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE ID IN (",
      absl::StrJoin(others, ", "), ")"));
  if (!hosts.ok()) return out;  // the connection ids still name them
  for (const auto& row : hosts->rows) {
    for (Holder& h : out) {
      if (h.connection == ToInt(row[0])) h.host = row[1].value_or("");
    }
  }
  return out;
}

void MysqlLockStore::Release() {
  conn_.reset();
  connection_id_ = 0;
}

}  // namespace msgq
