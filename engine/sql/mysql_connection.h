// MysqlConnection: one MariaDB Connector/C connection (RAII), with queries
// that return absl::Status instead of C error codes.
//
// Every connection sets its session up the same way, whatever the server's
// globals or init_connect say: character set utf8mb4, autocommit on,
// isolation READ COMMITTED (REPEATABLE READ when the binary log is on with
// binlog_format=STATEMENT, where InnoDB refuses READ COMMITTED writes), and no
// automatic reconnect (a broken connection is replaced by its owner, never
// silently revived without these settings). sql_mode is left as the server
// has it: msgq writes ids as hex literals (sql_literal.h) and QuoteString
// follows the server's NO_BACKSLASH_ESCAPES, so no mode changes their meaning.
//
// Not thread-safe: one thread uses a connection at a time. Errors map to
// status codes deliberately (ClassifyMysqlError): only a lost connection, a
// server that cannot take one, a read-only server or a Galera node outside
// the primary component (error 1047) -> UNAVAILABLE (retry on a new
// connection); a lock wait timeout, deadlock or interrupted statement ->
// ABORTED (nothing of the statement applied; retry); a statement larger
// than max_allowed_packet -> INVALID_ARGUMENT (permanent); an unknown table
// -> NOT_FOUND; denied -> PERMISSION_DENIED; anything else -> INTERNAL,
// permanent, with MySQL's text.
// After an error that leaves the connection unusable, broken() is true.
// Every error from the server or the client library carries its MySQL error
// code (MysqlErrorCode), so callers can tell, e.g., a lock wait timeout
// from a deadlock, both ABORTED.
//
// Example:
//   ASSIGN_OR_RETURN(auto conn, MysqlConnection::Connect(options));
//   ASSIGN_OR_RETURN(QueryResult r, conn->Query("SELECT 1"));
#ifndef MSGQ_ENGINE_SQL_MYSQL_CONNECTION_H_
#define MSGQ_ENGINE_SQL_MYSQL_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_activity.h"
#include "engine/sql/mysql_primary.h"

struct st_mysql;

namespace msgq {

enum class MysqlTls {
  kDisabled,
  kRequired,        // encrypted; the server's certificate is not checked
  kVerifyIdentity,  // encrypted; certificate checked against tls_ca and host
};

struct MysqlOptions {
  std::string host = "127.0.0.1";
  int port = 3306;
  // When set, connects over this Unix socket instead of TCP.
  std::string socket;
  std::string user = "root";
  std::string password;
  // Bounds the TCP connect (a SYN nobody answers); UNAVAILABLE after it.
  absl::Duration connect_timeout = absl::Seconds(5);
  // Bounds every read/write on the socket (MYSQL_OPT_READ_TIMEOUT /
  // WRITE_TIMEOUT), so a server that accepts packets but never answers
  // cannot hang us: the statement fails with UNAVAILABLE (CR_SERVER_LOST).
  // Also the longest a statement may run without returning its first row.
  absl::Duration io_timeout = absl::Seconds(30);
  // A silently dead network path (packets lost: no FIN, no RST) is noticed
  // within this on a TCP connection whatever it is doing, however long its
  // statements take: the kernel closes the connection when what msgqd sent
  // stays unacknowledged this long (TCP_USER_TIMEOUT), and keepalive probes
  // find a silent peer while nothing is in flight (waiting for a long
  // statement, idle in the pool; TcpKeepaliveFor). The statement in
  // progress then fails with UNAVAILABLE (CR_SERVER_LOST), a later one on
  // that connection at once (CR_SERVER_GONE_ERROR). A server that stops
  // reading what msgqd sends for this long counts as dead too. Zero leaves
  // the kernel's defaults (hours). Not used over a Unix socket.
  absl::Duration link_timeout = absl::Seconds(10);
  // TLS to the server; a connection that cannot have it fails (UNAVAILABLE)
  // rather than going on in plaintext.
  MysqlTls tls = MysqlTls::kDisabled;
  std::string tls_ca;  // PEM file, for kVerifyIdentity
  // Several servers of one replication topology (--mysql_host=a,b): when
  // set (and `socket` is empty), `host` and `port` are ignored, Connect()
  // connects to the writable one and the connection goes stale when the
  // primary moves (mysql_primary.h). Shared by every copy of these options.
  std::shared_ptr<MysqlPrimary> primary;
  // When set, every statement of every connection made from these options
  // (but the session set-up and transaction control: SET, BEGIN, START,
  // SAVEPOINT, RELEASE, ROLLBACK) is reported to it, for readiness
  // (mysql_activity.h). Shared by every copy of these options.
  std::shared_ptr<MysqlActivity> activity;
  // The session's binlog_row_image = NOBLOB: the binlog events of this
  // connection's writes carry a BLOB or TEXT column (a message's payload)
  // only where the statement changes it, so an ack, postpone or purge of
  // a large message does not copy its payload into the binlog twice.
  // Binlog readers then see msgq's own writes without the payload
  // (docs/operations.md#large-payloads). MariaDB allows it to a user with
  // BINLOG ADMIN (or SUPER) only; Connect() fails naming that otherwise.
  // False: the server's setting.
  bool binlog_noblob = false;
};

// The TCP settings a connection gets for MysqlOptions::link_timeout `t`
// (t > 0): keepalive probes after t/2 idle, then every t/10 (at least 1 s
// each), and TCP_USER_TIMEOUT t, which also ends the probing: an idle
// connection whose peer went silent is closed about t after it last heard
// from it, a busy one t after its oldest unacknowledged byte was sent.
struct TcpKeepalive {
  int idle_seconds;      // TCP_KEEPIDLE
  int interval_seconds;  // TCP_KEEPINTVL
  int count;             // TCP_KEEPCNT: the probes that fit in t
  int user_timeout_ms;   // TCP_USER_TIMEOUT
};
TcpKeepalive TcpKeepaliveFor(absl::Duration link_timeout);

// A fully buffered result set. Values are the text protocol's; NULL is
// std::nullopt.
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

class MysqlConnection {
 public:
  // Connects; UNAVAILABLE with MySQL's message when the server cannot be
  // reached or refuses the login. With MysqlOptions::primary: to the first
  // server in MysqlPrimary::Order() that answers and has @@read_only=0;
  // UNAVAILABLE naming every server and why it was passed over when none
  // does.
  static absl::StatusOr<std::unique_ptr<MysqlConnection>> Connect(
      const MysqlOptions& options);

  ~MysqlConnection();
  MysqlConnection(const MysqlConnection&) = delete;
  MysqlConnection& operator=(const MysqlConnection&) = delete;

  // Runs a statement that returns rows and buffers them all.
  absl::StatusOr<QueryResult> Query(absl::string_view sql);
  // Runs a statement without a result set; returns the affected row count.
  absl::StatusOr<uint64_t> Execute(absl::string_view sql);
  // Runs a statement and calls `on_row(values, lengths, n)` for each row as
  // it streams in (mysql_use_result), without buffering the whole set.
  // `values` has one entry per column (nullptr for NULL). An `on_row` that
  // returns bool ends the read when it returns false: the rest of the
  // result is not read, and as the connection is then in the middle of a
  // result it is closed (broken() is true; a pool replaces it).
  template <typename F>
  absl::Status ForEachRow(absl::string_view sql, F&& on_row);

  // Quotes `value` as an SQL string literal ('...' with escapes).
  std::string QuoteString(absl::string_view value);

  // The GTID ("d-s-n") the session's last statement committed, as
  // MariaDB's session state tracking of last_gtid reports it in that
  // statement's OK packet (set up at connect); "" when it committed nothing
  // or the server does not track it (MySQL, no binary log).
  std::string TrackedLastGtid() const;
  // Whether the session tracks last_gtid (MariaDB with a binary log), so
  // that TrackedLastGtid() is "" exactly when nothing was committed.
  bool tracks_gtid() const { return tracks_gtid_; }

  // The session's max_allowed_packet, read once at connect: no statement
  // may be longer.
  int64_t max_allowed_packet() const { return max_allowed_packet_; }
  // The session's isolation level ("READ COMMITTED" or "REPEATABLE READ").
  const std::string& isolation_level() const { return isolation_level_; }
  // Whether the server writes a binary log (@@log_bin at connect).
  bool log_bin() const { return log_bin_; }
  // Which server this is, read once at connect as
  // "server_id@hostname:port" (kServerIdentitySql's form, the `server` of
  // its BinlogPositions): a connection never reconnects silently, so it
  // holds for the connection's life.
  const std::string& server_identity() const { return server_identity_; }

  // Sets the session's innodb_lock_wait_timeout (whole seconds, at least
  // 1: MySQL's minimum), the longest one of its statements waits for a row
  // lock another transaction holds before failing with error 1205
  // (ABORTED). One statement the first time, none while the value is the
  // one set last; the session keeps the server's default until then.
  absl::Status SetLockWaitTimeout(int seconds);

  // Whether an error returned by this connection left it unusable, or it is
  // stale.
  bool broken() const { return broken_ || stale(); }
  // Between statements only: whether the server or the kernel closed the
  // connection since its last statement (a restart, wait_timeout, a dead
  // link found by keepalive). An idle connection has nothing to read, so a
  // readable or failed socket means it is gone. One poll(2), no I/O.
  bool Closed() const;
  // Opened on a server that is no longer the primary (MysqlOptions::primary
  // moved on): its statements fail with UNAVAILABLE without being sent.
  bool stale() const {
    return primary_ != nullptr && primary_->generation() != generation_;
  }
  // The server this connection is on ("host:port" or the socket path), and
  // its index in MysqlOptions::primary's endpoints (-1 without one).
  const std::string& server() const { return server_; }
  int endpoint() const { return endpoint_; }

  st_mysql* raw() { return mysql_; }

 private:
  explicit MysqlConnection(st_mysql* mysql) : mysql_(mysql) {}
  // Connects to one server (host/port/socket of `options`).
  static absl::StatusOr<std::unique_ptr<MysqlConnection>> ConnectOne(
      const MysqlOptions& options);
  static absl::StatusOr<std::unique_ptr<MysqlConnection>> ConnectToPrimary(
      const MysqlOptions& options);
  absl::Status SetUpSession(const MysqlOptions& options);
  // SO_KEEPALIVE and TCP_USER_TIMEOUT per TcpKeepaliveFor; INTERNAL with
  // errno's text when the socket refuses them.
  absl::Status SetLinkTimeout(absl::Duration link_timeout);
  absl::Status ErrorStatus(absl::string_view what);
  absl::Status StartQuery(absl::string_view sql);
  // Reports the statement `sql` of `kind` to activity_ (when set) until
  // its End().
  class Tracked;
  absl::Status ForEachRowImpl(absl::string_view sql,
                              bool (*cb)(void*, char**, unsigned long*,
                                         unsigned int),
                              void* ctx,
                              std::vector<std::string>* columns = nullptr);

  st_mysql* mysql_;
  bool broken_ = false;
  bool read_only_ = false;  // @@read_only at connect
  bool log_bin_ = false;    // @@log_bin at connect
  bool tracks_gtid_ = false;
  std::string server_;
  std::string server_identity_;            // at connect
  std::shared_ptr<MysqlPrimary> primary_;  // with MysqlOptions::primary
  uint64_t generation_ = 0;                // primary_'s, at connect
  int endpoint_ = -1;
  int64_t max_allowed_packet_ = 0;
  std::string isolation_level_;
  std::optional<int> lock_wait_timeout_;  // as SetLockWaitTimeout set it
  // MysqlOptions::activity, once the session is set up.
  std::shared_ptr<MysqlActivity> activity_;
};

template <typename F>
absl::Status MysqlConnection::ForEachRow(absl::string_view sql, F&& on_row) {
  auto trampoline = [](void* ctx, char** values, unsigned long* lengths,
                       unsigned int n) -> bool {
    auto& f = *static_cast<std::remove_reference_t<F>*>(ctx);
    if constexpr (std::is_same_v<decltype(f(values, lengths, n)), bool>) {
      return f(values, lengths, n);
    } else {
      f(values, lengths, n);
      return true;
    }
  };
  return ForEachRowImpl(sql, trampoline, &on_row);
}

// How an error code (mysql_errno) is reported, and whether the connection is
// unusable after it (the server closed it, or the protocol state is unknown).
struct MysqlErrorClass {
  absl::StatusCode code;
  bool drop_connection;
};
MysqlErrorClass ClassifyMysqlError(unsigned int code);

// The MySQL error code (mysql_errno) of an error a MysqlConnection
// returned; nullopt for any other status.
std::optional<unsigned int> MysqlErrorCode(const absl::Status& status);
// Error 1205 (ER_LOCK_WAIT_TIMEOUT): a statement waited for a row another
// transaction held locked longer than the session's lock wait timeout, and
// was rolled back (the transaction around it stays open).
bool IsLockWaitTimeout(const absl::Status& status);

// True when `status` means the connection or server is gone (retry later).
inline bool IsUnavailable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

// Backtick-quotes an identifier (doubling embedded backticks). Only use it on
// names that came from information_schema.
std::string QuoteIdentifier(absl::string_view name);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_CONNECTION_H_
