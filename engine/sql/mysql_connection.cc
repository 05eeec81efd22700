#include "engine/sql/mysql_connection.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace msgq {
namespace {

// Where MysqlConnection keeps the MySQL error code in a status it returns.
constexpr absl::string_view kErrorCodePayload = "msgq/mysql-errno";

void LibraryInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

unsigned int Seconds(absl::Duration d) {
  int64_t s = absl::ToInt64Seconds(d);
  return s < 1 ? 1 : static_cast<unsigned int>(s);
}

}  // namespace

MysqlErrorClass ClassifyMysqlError(unsigned int code) {
  switch (code) {
    // The connection is gone, or the server cannot take it: retry later on a
    // new connection.
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_UNKNOWN_HOST:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_SERVER_LOST_EXTENDED:
    case CR_SERVER_HANDSHAKE_ERR:
    case ER_CONNECTION_KILLED:
    case ER_SERVER_SHUTDOWN:
    case ER_CON_COUNT_ERROR:
    case ER_TOO_MANY_USER_CONNECTIONS:
    case ER_NET_READ_ERROR:
    case ER_NET_READ_INTERRUPTED:
    case ER_NET_ERROR_ON_WRITE:
    case ER_NET_WRITE_INTERRUPTED:
    case ER_NET_PACKETS_OUT_OF_ORDER:
    // A read-only server (a demoted primary, a replica): the writable one is
    // elsewhere, or will be after a failover.
    case ER_OPTION_PREVENTS_STATEMENT:
    case ER_READ_ONLY_MODE:
    // A Galera node outside the primary component (cut off in a minority,
    // or still joining) answers every statement that reads or writes data
    // with "WSREP has not yet prepared node for application use": another
    // node serves, or this one will once it is back in the primary
    // component. Dropped, so the reconnect goes to a node that may serve.
    case ER_UNKNOWN_COM_ERROR:
      return {absl::StatusCode::kUnavailable, true};
    // The statement was rolled back (or cut short); the connection is fine.
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_LOCK_DEADLOCK:
    case ER_QUERY_INTERRUPTED:
      return {absl::StatusCode::kAborted, false};
    // Too large a statement: permanent. The server closes the connection
    // after ER_NET_PACKET_TOO_LARGE; the client refuses before sending.
    case ER_NET_PACKET_TOO_LARGE:
      return {absl::StatusCode::kInvalidArgument, true};
    case CR_NET_PACKET_TOO_LARGE:
      return {absl::StatusCode::kInvalidArgument, false};
    case ER_NO_SUCH_TABLE:
    case ER_BAD_DB_ERROR:
      return {absl::StatusCode::kNotFound, false};
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_DBACCESS_DENIED_ERROR:
    case ER_ACCESS_DENIED_ERROR:
      return {absl::StatusCode::kPermissionDenied, false};
    case CR_OUT_OF_MEMORY:
      return {absl::StatusCode::kResourceExhausted, true};
    default:
      // Any other client-side error (commands out of sync, malformed
      // packet, ...) leaves the protocol state unknown: permanent for this
      // statement, and the connection is not used again.
      return {absl::StatusCode::kInternal,
              code >= CR_MIN_ERROR && code <= CR_MAX_ERROR};
  }
}

TcpKeepalive TcpKeepaliveFor(absl::Duration link_timeout) {
  const int64_t ms =
      std::max<int64_t>(1000, absl::ToInt64Milliseconds(link_timeout));
  TcpKeepalive k;
  k.idle_seconds = static_cast<int>(std::max<int64_t>(1, ms / 2000));
  k.interval_seconds = static_cast<int>(std::max<int64_t>(1, ms / 10000));
  k.count = static_cast<int>(
      std::max<int64_t>(1, (ms / 1000 - k.idle_seconds) / k.interval_seconds));
  k.user_timeout_ms = static_cast<int>(std::min<int64_t>(ms, INT32_MAX));
  return k;
}

std::optional<unsigned int> MysqlErrorCode(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrorCodePayload);
  unsigned int code = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &code)) {
    return std::nullopt;
  }
  return code;
}

bool IsLockWaitTimeout(const absl::Status& status) {
  return MysqlErrorCode(status) == ER_LOCK_WAIT_TIMEOUT;
}

std::string QuoteIdentifier(absl::string_view name) {
  return absl::StrCat("`", absl::StrReplaceAll(name, {{"`", "``"}}), "`");
}

absl::StatusOr<std::unique_ptr<MysqlConnection>> MysqlConnection::Connect(
    const MysqlOptions& options) {
  if (options.primary != nullptr && options.socket.empty()) {
    return ConnectToPrimary(options);
  }
  return ConnectOne(options);
}

absl::StatusOr<std::unique_ptr<MysqlConnection>>
MysqlConnection::ConnectToPrimary(const MysqlOptions& options) {
  MysqlPrimary& primary = *options.primary;
  std::vector<std::string> passed;
  for (size_t i : primary.Order()) {
    const MysqlEndpoint& endpoint = primary.endpoints()[i];
    MysqlOptions one = options;
    one.primary = nullptr;
    one.host = endpoint.host;
    one.port = endpoint.port;
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn = ConnectOne(one);
    if (!conn.ok()) {
      primary.Failed(i);
      passed.push_back(absl::StrCat(endpoint.ToString(), " (",
                                    conn.status().message(), ")"));
      continue;
    }
    if ((*conn)->read_only_) {
      primary.Lost(i);
      passed.push_back(absl::StrCat(endpoint.ToString(), " (read-only)"));
      continue;
    }
    (*conn)->generation_ = primary.Found(i);
    (*conn)->primary_ = options.primary;
    (*conn)->endpoint_ = static_cast<int>(i);
    return conn;
  }
  return absl::UnavailableError(
      absl::StrCat("no writable MySQL server among --mysql_host: ",
                   absl::StrJoin(passed, ", ")));
}

absl::StatusOr<std::unique_ptr<MysqlConnection>> MysqlConnection::ConnectOne(
    const MysqlOptions& options) {
  LibraryInitOnce();
  MYSQL* mysql = mysql_init(nullptr);
  if (mysql == nullptr) {
    return absl::ResourceExhaustedError("mysql_init failed");
  }
  unsigned int connect_timeout = Seconds(options.connect_timeout);
  unsigned int io_timeout = Seconds(options.io_timeout);
  mysql_optionsv(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_optionsv(mysql, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
  mysql_optionsv(mysql, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
  mysql_optionsv(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  // A silent reconnect would lose the session settings below and any open
  // transaction; callers replace a broken connection themselves.
  my_bool reconnect = 0;
  mysql_optionsv(mysql, MYSQL_OPT_RECONNECT, &reconnect);
  if (options.tls != MysqlTls::kDisabled) {
    my_bool enforce = 1;
    mysql_optionsv(mysql, MYSQL_OPT_SSL_ENFORCE, &enforce);
    if (options.tls == MysqlTls::kVerifyIdentity) {
      mysql_optionsv(mysql, MYSQL_OPT_SSL_CA, options.tls_ca.c_str());
      my_bool verify = 1;
      mysql_optionsv(mysql, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    }
  }
  const bool use_socket = !options.socket.empty();
  if (use_socket) {
    unsigned int protocol = MYSQL_PROTOCOL_SOCKET;
    mysql_optionsv(mysql, MYSQL_OPT_PROTOCOL, &protocol);
  }
  if (mysql_real_connect(mysql, use_socket ? "localhost" : options.host.c_str(),
                         options.user.c_str(), options.password.c_str(),
                         nullptr, use_socket ? 0 : options.port,
                         use_socket ? options.socket.c_str() : nullptr,
                         CLIENT_MULTI_RESULTS) == nullptr) {
    absl::Status status = absl::UnavailableError(
        absl::StrCat("cannot connect to MySQL at ",
                     use_socket ? options.socket
                                : absl::StrCat(options.host, ":", options.port),
                     ": ", mysql_error(mysql)));
    mysql_close(mysql);
    return status;
  }
  std::unique_ptr<MysqlConnection> conn(new MysqlConnection(mysql));
  conn->server_ = use_socket ? options.socket
                             : absl::StrCat(options.host, ":", options.port);
  if (!use_socket && options.link_timeout > absl::ZeroDuration()) {
    if (absl::Status s = conn->SetLinkTimeout(options.link_timeout); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = conn->SetUpSession(options); !s.ok()) {
    // The server answered, so the cause is permanent unless the connection
    // broke meanwhile.
    return absl::Status(
        s.code(), absl::StrCat("setting up the MySQL session: ", s.message()));
  }
  conn->activity_ = options.activity;
  return conn;
}

std::string MysqlConnection::TrackedLastGtid() const {
  const char* data = nullptr;
  size_t length = 0;
  // Names and values alternate: last_gtid, then its value.
  int more = mysql_session_track_get_first(
      mysql_, SESSION_TRACK_SYSTEM_VARIABLES, &data, &length);
  while (more == 0) {
    const bool gtid = absl::string_view(data, length) == "last_gtid";
    if (mysql_session_track_get_next(mysql_, SESSION_TRACK_SYSTEM_VARIABLES,
                                     &data, &length) != 0) {
      break;
    }
    if (gtid) return std::string(data, length);
    more = mysql_session_track_get_next(mysql_, SESSION_TRACK_SYSTEM_VARIABLES,
                                        &data, &length);
  }
  return "";
}

absl::Status MysqlConnection::SetUpSession(const MysqlOptions& options) {
  absl::StatusOr<QueryResult> vars = Query(
      "SELECT @@max_allowed_packet, @@log_bin, @@binlog_format, "
      "@@read_only, CONCAT(@@server_id, '@', @@hostname, ':', @@port)");
  if (!vars.ok()) return vars.status();
  if (vars->rows.size() != 1 || vars->rows[0].size() != 5) {
    return absl::InternalError("unexpected reply to the session query");
  }
  const auto& row = vars->rows[0];
  int64_t packet = 0;
  if (!row[0].has_value() || !absl::SimpleAtoi(*row[0], &packet) ||
      packet <= 0) {
    return absl::InternalError("unreadable @@max_allowed_packet");
  }
  max_allowed_packet_ = packet;
  read_only_ = row[3].value_or("0") != "0";
  server_identity_ = row[4].value_or("");
  log_bin_ = row[1].value_or("0") == "1";
  // READ COMMITTED takes no gap locks, so an ack of a missing id or a purge
  // never blocks a producer's INSERT. InnoDB refuses writes at READ
  // COMMITTED under binlog_format=STATEMENT (error 1665); there REPEATABLE
  // READ is kept, with autocommit still ending every statement's locks.
  const bool statement_binlog =
      row[1].value_or("0") == "1" &&
      absl::EqualsIgnoreCase(row[2].value_or(""), "STATEMENT");
  isolation_level_ = statement_binlog ? "REPEATABLE READ" : "READ COMMITTED";
  absl::StatusOr<uint64_t> set = Execute(absl::StrCat(
      "SET SESSION TRANSACTION ISOLATION LEVEL ", isolation_level_));
  if (!set.ok()) return set.status();
  // The server's global autocommit (or an init_connect) may have turned it
  // off; every msgq statement outside BEGIN..COMMIT must commit at once.
  set = Execute("SET SESSION autocommit = 1");
  if (!set.ok()) return set.status();
  if (options.binlog_noblob && row[1].value_or("0") == "1") {
    set = Execute("SET SESSION binlog_row_image = 'NOBLOB'");
    if (!set.ok()) {
      return absl::Status(
          set.status().code(),
          absl::StrCat("binlog_row_image = NOBLOB for --mysql_noblob_writes "
                       "(needs the BINLOG ADMIN privilege): ",
                       set.status().message()));
    }
  }
  // Each commit's OK packet names its GTID (TrackedLastGtid), at no round
  // trip of its own. A server without last_gtid (MySQL) refuses it: then
  // no GTID is known, and nothing else changes.
  if (row[1].value_or("0") == "1") {
    tracks_gtid_ =
        Execute(
            "SET SESSION session_track_system_variables = CONCAT_WS(',', "
            "@@session.session_track_system_variables, 'last_gtid')")
            .ok();
  }
  return absl::OkStatus();
}

absl::Status MysqlConnection::SetLinkTimeout(absl::Duration link_timeout) {
  const int fd = static_cast<int>(mysql_get_socket(mysql_));
  const TcpKeepalive k = TcpKeepaliveFor(link_timeout);
  const int on = 1;
  const struct {
    int level, name, value;
    const char* what;
  } settings[] = {
      {SOL_SOCKET, SO_KEEPALIVE, on, "SO_KEEPALIVE"},
      {IPPROTO_TCP, TCP_KEEPIDLE, k.idle_seconds, "TCP_KEEPIDLE"},
      {IPPROTO_TCP, TCP_KEEPINTVL, k.interval_seconds, "TCP_KEEPINTVL"},
      {IPPROTO_TCP, TCP_KEEPCNT, k.count, "TCP_KEEPCNT"},
      {IPPROTO_TCP, TCP_USER_TIMEOUT, k.user_timeout_ms, "TCP_USER_TIMEOUT"},
  };
  for (const auto& s : settings) {
    if (setsockopt(fd, s.level, s.name, &s.value, sizeof(s.value)) != 0) {
      return absl::InternalError(absl::StrCat("setting ", s.what, " on the ",
                                              "MySQL connection to ", server_,
                                              ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

bool MysqlConnection::Closed() const {
  pollfd p{static_cast<int>(mysql_get_socket(mysql_)), POLLIN | POLLRDHUP, 0};
  return p.fd < 0 || poll(&p, 1, 0) != 0;
}

MysqlConnection::~MysqlConnection() { mysql_close(mysql_); }

absl::Status MysqlConnection::ErrorStatus(absl::string_view what) {
  const unsigned int code = mysql_errno(mysql_);
  std::string message =
      absl::StrCat(what, ": MySQL error ", code, ": ", mysql_error(mysql_));
  const MysqlErrorClass c = ClassifyMysqlError(code);
  if (c.drop_connection) broken_ = true;
  absl::Status status(c.code, message);
  status.SetPayload(kErrorCodePayload, absl::Cord(absl::StrCat(code)));
  return status;
}

namespace {

// Session set-up and transaction control answer at once even while data
// statements wait (a global read lock, a full disk): they say nothing about
// whether MySQL takes msgqd's writes.
bool IsControlStatement(absl::string_view sql) {
  sql = absl::StripLeadingAsciiWhitespace(sql);
  for (absl::string_view word :
       {"SET ", "BEGIN", "START ", "SAVEPOINT ", "RELEASE ", "ROLLBACK"}) {
    if (absl::StartsWithIgnoreCase(sql, word)) return true;
  }
  return false;
}

}  // namespace

class MysqlConnection::Tracked {
 public:
  Tracked(MysqlActivity* activity, absl::string_view sql,
          MysqlActivity::Kind kind)
      : activity_(activity == nullptr || IsControlStatement(sql) ? nullptr
                                                                 : activity),
        token_(activity_ == nullptr ? 0 : activity_->Begin(kind)) {}
  ~Tracked() { Done(absl::OkStatus()); }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;

  // The statement ended with `status`; returns it. A status without a MySQL
  // error code never reached the server; a client error (2000-2999: lost,
  // timed out) was not answered.
  const absl::Status& Done(const absl::Status& status) {
    if (activity_ == nullptr) return status;
    MysqlActivity* activity = std::exchange(activity_, nullptr);
    if (status.ok()) {
      activity->End(token_, /*answered=*/true, 0, "");
      return status;
    }
    const std::optional<unsigned int> code = MysqlErrorCode(status);
    if (!code.has_value()) {
      activity->Cancel(token_);
    } else {
      activity->End(token_, *code < 2000 || *code >= 3000, *code,
                    status.message());
    }
    return status;
  }

 private:
  MysqlActivity* activity_;
  const uint64_t token_;
};

absl::Status MysqlConnection::SetLockWaitTimeout(int seconds) {
  seconds = std::max(1, seconds);
  if (lock_wait_timeout_ == seconds) return absl::OkStatus();
  absl::StatusOr<uint64_t> set =
      Execute(absl::StrCat("SET SESSION innodb_lock_wait_timeout = ", seconds));
  if (!set.ok()) return set.status();
  lock_wait_timeout_ = seconds;
  return absl::OkStatus();
}

absl::Status MysqlConnection::StartQuery(absl::string_view sql) {
  if (broken_) return absl::UnavailableError("MySQL connection is broken");
  if (stale()) {
    broken_ = true;
    return absl::UnavailableError(absl::StrCat(
        "the MySQL primary moved away from ", server_, "; reconnecting"));
  }
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
    return ErrorStatus("query failed");
  }
  return absl::OkStatus();
}

absl::StatusOr<QueryResult> MysqlConnection::Query(absl::string_view sql) {
  QueryResult result;
  auto on_row = [&result](char** values, unsigned long* lengths,
                          unsigned int n) {
    auto& row = result.rows.emplace_back();
    row.reserve(n);
    for (unsigned int i = 0; i < n; ++i) {
      if (values[i] == nullptr) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(std::string(values[i], lengths[i]));
      }
    }
  };
  auto trampoline = [](void* ctx, char** values, unsigned long* lengths,
                       unsigned int n) {
    (*static_cast<decltype(on_row)*>(ctx))(values, lengths, n);
    return true;
  };
  absl::Status status =
      ForEachRowImpl(sql, trampoline, &on_row, &result.columns);
  if (!status.ok()) return status;
  return result;
}

absl::Status MysqlConnection::ForEachRowImpl(
    absl::string_view sql,
    bool (*cb)(void*, char**, unsigned long*, unsigned int), void* ctx,
    std::vector<std::string>* columns) {
  Tracked tracked(activity_.get(), sql, MysqlActivity::Kind::kRead);
  if (absl::Status s = StartQuery(sql); !s.ok()) return tracked.Done(s);
  MYSQL_RES* res = mysql_use_result(mysql_);
  if (res == nullptr) {
    if (mysql_field_count(mysql_) == 0) return absl::OkStatus();
    return tracked.Done(ErrorStatus("reading result failed"));
  }
  const unsigned int n = mysql_num_fields(res);
  if (columns != nullptr) {
    MYSQL_FIELD* fields = mysql_fetch_fields(res);
    for (unsigned int i = 0; i < n; ++i) columns->emplace_back(fields[i].name);
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)) != nullptr) {
    if (!cb(ctx, row, mysql_fetch_lengths(res), n)) {
      // Freeing the result would read the rest of it: end the connection
      // under it instead, so that nothing more is read.
      broken_ = true;
      (void)shutdown(mysql_get_socket(mysql_), SHUT_RDWR);
      mysql_free_result(res);
      return absl::OkStatus();
    }
  }
  absl::Status status = absl::OkStatus();
  if (mysql_errno(mysql_) != 0) status = ErrorStatus("reading rows failed");
  mysql_free_result(res);
  return tracked.Done(status);
}

absl::StatusOr<uint64_t> MysqlConnection::Execute(absl::string_view sql) {
  Tracked tracked(activity_.get(), sql, MysqlActivity::Kind::kWrite);
  if (absl::Status s = StartQuery(sql); !s.ok()) return tracked.Done(s);
  MYSQL_RES* res = mysql_store_result(mysql_);
  if (res != nullptr) mysql_free_result(res);
  const my_ulonglong affected = mysql_affected_rows(mysql_);
  return affected == static_cast<my_ulonglong>(-1) ? 0 : affected;
}

std::string MysqlConnection::QuoteString(absl::string_view value) {
  std::string out(value.size() * 2 + 3, '\0');
  out[0] = '\'';
  unsigned long n =
      mysql_real_escape_string(mysql_, &out[1], value.data(), value.size());
  out.resize(n + 1);
  out.push_back('\'');
  return out;
}

}  // namespace msgq
