#include "msgq/inbox.h"

#include <mysql.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq {
namespace {

// MySQL/MariaDB error numbers the inbox tells apart.
constexpr unsigned int kDupEntry = 1062;
constexpr unsigned int kNoSuchTable = 1146;
constexpr unsigned int kTableAccessDenied = 1142;
constexpr unsigned int kDbAccessDenied = 1044;
constexpr unsigned int kAccessDenied = 1045;
constexpr unsigned int kLockWaitTimeout = 1205;
constexpr unsigned int kDeadlock = 1213;
constexpr unsigned int kConnectionKilled = 1927;
constexpr unsigned int kServerShutdown = 1053;

// schema/msgq_inbox.sql after "CREATE TABLE IF NOT EXISTS `NAME`" (kept
// in step with it and with the Python, Node and Go helpers).
constexpr absl::string_view kDdlColumns =
    " (\n"
    "  source       VARCHAR(64)    NOT NULL,\n"
    "  keyspace     VARCHAR(64)    NOT NULL,\n"
    "  table_name   VARCHAR(64)    NOT NULL,\n"
    "  message_id   VARBINARY(255) NOT NULL,\n"
    "  processed_at TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n"
    "  PRIMARY KEY (source, keyspace, table_name, message_id),\n"
    "  KEY processed_at_idx (processed_at)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

void LibraryInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

// Client errors (2000-2999: gone away, lost, cannot connect) and the
// server's "killed" and "shutting down": the connection is unusable.
bool IsConnectionError(unsigned int number) {
  return (number >= 2000 && number < 3000) || number == kConnectionKilled ||
         number == kServerShutdown;
}

absl::StatusCode CodeOf(unsigned int number) {
  switch (number) {
    case kDupEntry:
      return absl::StatusCode::kAlreadyExists;
    case kLockWaitTimeout:
    case kDeadlock:
      return absl::StatusCode::kAborted;
    case kTableAccessDenied:
    case kDbAccessDenied:
    case kAccessDenied:
      return absl::StatusCode::kPermissionDenied;
    case kNoSuchTable:
      return absl::StatusCode::kNotFound;
  }
  return IsConnectionError(number) ? absl::StatusCode::kUnavailable
                                   : absl::StatusCode::kInternal;
}

absl::Status ErrorOf(MYSQL* mysql) {
  const unsigned int number = mysql_errno(mysql);
  return absl::Status(
      CodeOf(number),
      absl::StrFormat("MySQL error %u: %s", number, mysql_error(mysql)));
}

// Runs `sql`; with `rows`, stores its result set there.
absl::Status RunOn(MYSQL* mysql, absl::string_view sql, InboxRows* rows,
                   uint64_t* affected) {
  if (mysql_real_query(mysql, sql.data(), sql.size()) != 0) {
    return ErrorOf(mysql);
  }
  MYSQL_RES* result = mysql_store_result(mysql);
  if (result == nullptr) {
    if (mysql_field_count(mysql) != 0) return ErrorOf(mysql);
    if (affected != nullptr) *affected = mysql_affected_rows(mysql);
    return absl::OkStatus();
  }
  if (rows != nullptr) {
    const unsigned int columns = mysql_num_fields(result);
    while (MYSQL_ROW row = mysql_fetch_row(result)) {
      const unsigned long* lengths = mysql_fetch_lengths(result);
      std::vector<std::optional<std::string>>& out = rows->emplace_back();
      for (unsigned int i = 0; i < columns; ++i) {
        if (row[i] == nullptr) {
          out.emplace_back(std::nullopt);
        } else {
          out.emplace_back(std::string(row[i], lengths[i]));
        }
      }
    }
  }
  mysql_free_result(result);
  return absl::OkStatus();
}

bool IsPlainName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '$') {
      return false;
    }
  }
  return true;
}

}  // namespace

// One connection to the consumer's database. Not thread-safe: used by one
// message at a time.
class Inbox::Connection {
 public:
  static absl::StatusOr<std::unique_ptr<Connection>> Open(
      const InboxConnection& options) {
    LibraryInitOnce();
    MYSQL* mysql = mysql_init(nullptr);
    if (mysql == nullptr) {
      return absl::ResourceExhaustedError("mysql_init failed");
    }
    unsigned int timeout = static_cast<unsigned int>(
        std::max<int64_t>(1, absl::ToInt64Seconds(options.connect_timeout)));
    mysql_optionsv(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_optionsv(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    // A silent reconnect would lose the open transaction.
    my_bool reconnect = 0;
    mysql_optionsv(mysql, MYSQL_OPT_RECONNECT, &reconnect);
    const bool socket = !options.unix_socket.empty();
    if (socket) {
      unsigned int protocol = MYSQL_PROTOCOL_SOCKET;
      mysql_optionsv(mysql, MYSQL_OPT_PROTOCOL, &protocol);
    }
    if (mysql_real_connect(
            mysql, socket ? "localhost" : options.host.c_str(),
            options.user.c_str(), options.password.c_str(),
            options.database.empty() ? nullptr : options.database.c_str(),
            socket ? 0 : options.port,
            socket ? options.unix_socket.c_str() : nullptr, 0) == nullptr) {
      const unsigned int number = mysql_errno(mysql);
      absl::Status status(
          IsConnectionError(number) ? absl::StatusCode::kUnavailable
                                    : CodeOf(number),
          absl::StrFormat(
              "cannot connect to the inbox database at %s: MySQL error %u: %s",
              socket ? options.unix_socket
                     : absl::StrCat(options.host, ":", options.port),
              number, mysql_error(mysql)));
      mysql_close(mysql);
      return status;
    }
    return std::unique_ptr<Connection>(new Connection(mysql));
  }

  ~Connection() { mysql_close(mysql_); }

  MYSQL* mysql() const { return mysql_; }
  bool broken() const { return broken_; }
  // mysql_errno of the last statement that failed here.
  unsigned int last_errno() const { return last_errno_; }

  absl::Status Run(absl::string_view sql, InboxRows* rows = nullptr,
                   uint64_t* affected = nullptr) {
    absl::Status status = RunOn(mysql_, sql, rows, affected);
    if (!status.ok()) {
      last_errno_ = mysql_errno(mysql_);
      if (IsConnectionError(last_errno_)) broken_ = true;
    }
    return status;
  }

  // Rolls back; a failure marks the connection broken.
  void Rollback() {
    if (!Run("ROLLBACK").ok()) broken_ = true;
  }

 private:
  explicit Connection(MYSQL* mysql) : mysql_(mysql) {}

  MYSQL* const mysql_;
  bool broken_ = false;
  unsigned int last_errno_ = 0;
};

absl::StatusOr<uint64_t> InboxTransaction::Execute(absl::string_view sql) {
  uint64_t affected = 0;
  absl::Status status = RunOn(mysql_, sql, nullptr, &affected);
  if (!status.ok()) return status;
  return affected;
}

absl::StatusOr<InboxRows> InboxTransaction::Query(absl::string_view sql) {
  InboxRows rows;
  absl::Status status = RunOn(mysql_, sql, &rows, nullptr);
  if (!status.ok()) return status;
  return rows;
}

std::string InboxTransaction::Quote(absl::string_view value) const {
  std::string out(2 * value.size() + 3, '\0');
  out[0] = '\'';
  const unsigned long n =
      mysql_real_escape_string(mysql_, &out[1], value.data(), value.size());
  out.resize(n + 1);
  out += '\'';
  return out;
}

absl::StatusOr<std::unique_ptr<Inbox>> Inbox::Create(InboxOptions options) {
  if (options.source.empty() || options.source.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inbox source must be 1 to 64 bytes, got \"", options.source, "\""));
  }
  if (!IsPlainName(options.inbox_table)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inbox table \"", options.inbox_table, "\" is not a plain table name"));
  }
  if (options.max_idle_connections < 0) {
    return absl::InvalidArgumentError("max_idle_connections must be >= 0");
  }
  return std::unique_ptr<Inbox>(new Inbox(std::move(options)));
}

Inbox::Inbox(InboxOptions options)
    : options_(std::move(options)),
      insert_prefix_(absl::StrCat("INSERT INTO `", options_.inbox_table,
                                  "` (source, keyspace, table_name, "
                                  "message_id) VALUES (")) {}

Inbox::~Inbox() = default;

Inbox::Stats Inbox::stats() const {
  return Stats{processed_.load(), duplicates_.load()};
}

void Inbox::Log(absl::string_view text) const {
  if (options_.log) {
    options_.log(text);
  } else {
    std::fprintf(stderr, "msgq inbox: %.*s\n", static_cast<int>(text.size()),
                 text.data());
  }
}

absl::StatusOr<std::unique_ptr<Inbox::Connection>> Inbox::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
  }
  return Connection::Open(options_.connection);
}

void Inbox::Release(std::unique_ptr<Connection> conn) {
  if (conn == nullptr || conn->broken()) return;  // closed here, unlocked
  {
    absl::MutexLock lock(&mu_);
    if (idle_.size() < static_cast<size_t>(options_.max_idle_connections)) {
      idle_.push_back(std::move(conn));
    }
  }
  // A connection the pool has no room for is closed here, unlocked.
}

absl::Status Inbox::EnsureTable() {
  absl::StatusOr<std::unique_ptr<Connection>> conn = Acquire();
  if (!conn.ok()) return conn.status();
  absl::Status status = EnsureTableOn(**conn);
  Release(*std::move(conn));
  return status;
}

absl::Status Inbox::EnsureTableOn(Connection& conn) {
  {
    absl::MutexLock lock(&mu_);
    if (ready_) return absl::OkStatus();
  }
  const std::string& table = options_.inbox_table;
  absl::Status status =
      conn.Run(absl::StrCat("SELECT 1 FROM `", table, "` LIMIT 0"));
  if (!status.ok()) {
    if (conn.last_errno() == kTableAccessDenied) {
      return absl::PermissionDeniedError(absl::StrCat(
          "no access to inbox table ", table,
          ": GRANT SELECT, INSERT, DELETE ON it to the consumer's user (",
          status.message(), ")"));
    }
    if (conn.last_errno() != kNoSuchTable) return status;
    if (!options_.create) {
      return absl::FailedPreconditionError(absl::StrCat(
          "inbox table ", table,
          " does not exist: create it with schema/msgq_inbox.sql"));
    }
    absl::Status created = conn.Run(
        absl::StrCat("CREATE TABLE IF NOT EXISTS `", table, "`", kDdlColumns));
    if (!created.ok()) {
      if (conn.last_errno() == kTableAccessDenied ||
          conn.last_errno() == kDbAccessDenied) {
        return absl::PermissionDeniedError(absl::StrCat(
            "inbox table ", table,
            " does not exist and the user may not create it: GRANT CREATE ON "
            "the database to the consumer's user, or run "
            "schema/msgq_inbox.sql as an administrator (",
            created.message(), ")"));
      }
      return created;
    }
  }
  absl::MutexLock lock(&mu_);
  ready_ = true;
  return absl::OkStatus();
}

HandlerResult Inbox::DatabaseFailed(const absl::Status& status) {
  Log(status.message());
  return HandlerResult::Retry(absl::StrCat("inbox: ", status.message()));
}

std::function<HandlerResult(const Message&)> Inbox::Handler(TableRef table,
                                                            InboxWork work) {
  return [this, table = std::move(table), work = std::move(work)](
             const Message& message) { return Process(table, message, work); };
}

HandlerResult Inbox::Process(const TableRef& table, const Message& message,
                             const InboxWork& work) {
  absl::StatusOr<std::unique_ptr<Connection>> acquired = Acquire();
  if (!acquired.ok()) return DatabaseFailed(acquired.status());
  std::unique_ptr<Connection> conn = *std::move(acquired);
  if (absl::Status s = EnsureTableOn(*conn); !s.ok()) {
    Release(std::move(conn));
    Log(s.message());
    return HandlerResult::Retry(std::string(s.message()));
  }
  absl::Status begun = conn->Run("START TRANSACTION");
  if (!begun.ok() && conn->broken()) {
    // An idle connection the server closed meanwhile: once more on a new
    // one.
    conn.reset();
    acquired = Connection::Open(options_.connection);
    if (!acquired.ok()) return DatabaseFailed(acquired.status());
    conn = *std::move(acquired);
    begun = conn->Run("START TRANSACTION");
  }
  if (!begun.ok()) {
    Release(std::move(conn));
    return DatabaseFailed(begun);
  }
  InboxTransaction tx(conn->mysql());
  const std::string insert = absl::StrCat(
      insert_prefix_, tx.Quote(options_.source), ", ", tx.Quote(table.keyspace),
      ", ", tx.Quote(table.name), ", ", tx.Quote(message.id()), ")");
  if (absl::Status s = conn->Run(insert); !s.ok()) {
    const bool duplicate = conn->last_errno() == kDupEntry;
    conn->Rollback();
    Release(std::move(conn));
    if (!duplicate) return DatabaseFailed(s);
    duplicates_.fetch_add(1);
    if (options_.on_duplicate) options_.on_duplicate(message);
    return HandlerResult::Ack();
  }
  HandlerResult result = work(message, tx);
  if (result.kind() != HandlerResult::Kind::kAck) {
    conn->Rollback();
    Release(std::move(conn));
    return result;
  }
  if (absl::Status s = conn->Run("COMMIT"); !s.ok()) {
    conn->Rollback();
    Release(std::move(conn));
    return DatabaseFailed(s);
  }
  Release(std::move(conn));
  processed_.fetch_add(1);
  if (options_.on_committed) options_.on_committed(message);
  return HandlerResult::Ack();
}

absl::StatusOr<int64_t> Inbox::Purge(absl::Duration retention,
                                     PurgeOptions options) {
  if (retention < absl::Microseconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("purge retention must be positive, got ",
                     absl::FormatDuration(retention)));
  }
  if (options.batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("purge batch must be at least 1, got ", options.batch));
  }
  absl::StatusOr<std::unique_ptr<Connection>> acquired = Acquire();
  if (!acquired.ok()) return acquired.status();
  std::unique_ptr<Connection> conn = *std::move(acquired);
  if (absl::Status s = EnsureTableOn(*conn); !s.ok()) {
    Release(std::move(conn));
    return s;
  }
  // Autocommit: each batch is its own transaction.
  const std::string statement =
      absl::StrCat("DELETE FROM `", options_.inbox_table,
                   "` WHERE processed_at < NOW(6) - INTERVAL ",
                   absl::ToInt64Microseconds(retention),
                   " MICROSECOND ORDER BY processed_at LIMIT ", options.batch);
  int64_t deleted = 0;
  for (;;) {
    uint64_t affected = 0;
    if (absl::Status s = conn->Run(statement, nullptr, &affected); !s.ok()) {
      Release(std::move(conn));
      return s;
    }
    deleted += static_cast<int64_t>(affected);
    if (affected < static_cast<uint64_t>(options.batch)) break;
    if (options.pause > absl::ZeroDuration()) absl::SleepFor(options.pause);
  }
  Release(std::move(conn));
  return deleted;
}

}  // namespace msgq
