// Inbox: effectively-once processing of messages in the consumer's own
// MySQL/MariaDB database (the Idempotent Consumer pattern; see
// docs/effectively-once.md), over MariaDB Connector/C.
//
// msgq delivers at least once: a message comes again after its ack wait,
// after a crash between the consumer's commit and its ack, at a lease
// takeover. An Inbox wraps a Subscriber handler so that its database work
// happens once per message id anyway. For each message it takes a
// connection to the consumer's database (any server, not necessarily
// msgq's), begins a transaction, INSERTs (source, keyspace, table, id) into
// the inbox table first, runs the work in that transaction, commits, and
// only then returns Ack:
//   - the row exists already (processed and committed before, its ack was
//     lost; or a concurrent consumer committed it while this one waited on
//     its row lock): the work does not run; Ack;
//   - the work returns Retry, RetryAfter or Dead, or the commit fails: the
//     transaction rolls back, the inbox row with it, and the result is the
//     work's (a database error: Retry("inbox: ...") with the table's
//     backoff; a broken connection is replaced at the next message).
//
// Example:
//   auto inbox = Inbox::Create({.connection = {.host = "billing-db",
//                                              .user = "billing",
//                                              .database = "billing"},
//                               .source = "prod"});
//   if (!inbox.ok()) return inbox.status();
//   auto subscriber = Subscriber::Start(
//       NewChannel("msgq:15999"), "transfers",
//       (*inbox)->Handler("transfers",
//           [](const Message& msg, InboxTransaction& tx) -> HandlerResult {
//             Transfer t = ParseTransfer(msg.Get("message"));
//             return tx.Execute(absl::StrCat(
//                 "UPDATE accounts SET balance = balance - ", t.amount,
//                 " WHERE id = ", t.from)).status();  // an error: rolled back
//           }));
//   ...
//   (*inbox)->Purge(absl::Hours(7 * 24));  // e.g. from a daily job
//
// The inbox table (schema/msgq_inbox.sql) is created on first use when it
// is missing and the user may (CREATE TABLE IF NOT EXISTS); otherwise the
// message is retried with a reason naming the missing grant.
//
// Not covered: effects outside that database (an email, an HTTP call) and
// reads of external state. The transaction is open while the work runs:
// keep it well under the table's ack wait (the Subscriber's heartbeat
// extends a slow one).
//
// Thread-safety: an Inbox is safe for concurrent use; each message takes
// its own connection from a small pool (so a Subscriber with concurrency > 1
// can share one). An InboxTransaction belongs to one work call and must not
// outlive it. The hooks run on the handler's thread.
//
// This is the library msgq_inbox (client/CMakeLists.txt), separate from
// msgq_client so that only its users link Connector/C.
#ifndef MSGQ_INBOX_H_
#define MSGQ_INBOX_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "msgq/handler_result.h"
#include "msgq/message.h"
#include "msgq/table_ref.h"

struct st_mysql;  // MYSQL of <mysql.h>

namespace msgq {

// Where the consumer's database is.
struct InboxConnection {
  // TCP host and port; ignored when `unix_socket` is set.
  std::string host = "localhost";
  unsigned int port = 3306;
  std::string unix_socket;
  std::string user;
  std::string password;
  // The database holding the inbox table and the work's tables.
  std::string database;
  absl::Duration connect_timeout = absl::Seconds(10);
};

struct InboxOptions {
  InboxConnection connection;
  // Names the msgq deployment the messages come from (1 to 64 bytes); part
  // of the key, so two deployments with the same table names and ids do not
  // collide in one inbox. Required.
  std::string source;
  // The inbox table (a plain name: letters, digits, _ and $).
  std::string inbox_table = "msgq_inbox";
  // Create the table when it is missing.
  bool create = true;
  // Connections kept open between messages (more are opened when more
  // messages run at once, and closed afterwards).
  int max_idle_connections = 4;
  // Called after the commit, before the result goes back to the Subscriber
  // (tests use it to crash between the commit and the ack).
  std::function<void(const Message&)> on_committed;
  // Called for a message found in the inbox (acked without running work).
  std::function<void(const Message&)> on_duplicate;
  // Failures of the work or of the database (each also a retry); unset =
  // stderr.
  std::function<void(absl::string_view)> log;
};

// The rows of a query, each column's text form (nullopt = NULL).
using InboxRows = std::vector<std::vector<std::optional<std::string>>>;

// The open transaction a work runs in. Its statements commit together with
// the message's inbox row, or not at all. Errors of Execute and Query:
// ALREADY_EXISTS (duplicate key, 1062), ABORTED (deadlock or lock wait
// timeout: retry the message), PERMISSION_DENIED, NOT_FOUND (no such
// table), UNAVAILABLE (the connection broke), INTERNAL (anything else); the
// message carries the MySQL error number and text.
class InboxTransaction {
 public:
  InboxTransaction(const InboxTransaction&) = delete;
  InboxTransaction& operator=(const InboxTransaction&) = delete;

  // Runs one statement without a result set; returns the affected rows.
  absl::StatusOr<uint64_t> Execute(absl::string_view sql);
  // Runs one statement with a result set (SELECT ... ); returns its rows.
  absl::StatusOr<InboxRows> Query(absl::string_view sql);
  // `value` as a quoted, escaped SQL string literal ('...').
  std::string Quote(absl::string_view value) const;
  // The connection, for the C API (mysql_real_query ...). Do not commit,
  // roll back or close it.
  st_mysql* mysql() const { return mysql_; }

 private:
  friend class Inbox;
  explicit InboxTransaction(st_mysql* mysql) : mysql_(mysql) {}
  st_mysql* const mysql_;
};

// The work of a handler, inside the transaction (see the file comment).
using InboxWork =
    std::function<HandlerResult(const Message& message, InboxTransaction& tx)>;

struct PurgeOptions {
  // Rows per DELETE (and transaction); at least 1.
  int batch = 1000;
  // Sleep between batches, to spare a busy server.
  absl::Duration pause = absl::ZeroDuration();
};

class Inbox {
 public:
  // Counters since Create().
  struct Stats {
    int64_t processed = 0;   // messages whose work committed
    int64_t duplicates = 0;  // messages acked without running work
  };

  // Returns an Inbox; it connects at the first use. INVALID_ARGUMENT when
  // `source` is empty or longer than 64 bytes, `inbox_table` is not a plain
  // name, or `max_idle_connections` < 0.
  static absl::StatusOr<std::unique_ptr<Inbox>> Create(InboxOptions options);
  ~Inbox();

  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Makes sure the inbox table exists, creating it when missing and
  // `create`. FAILED_PRECONDITION when it is missing and `create` is false;
  // PERMISSION_DENIED when it is missing and the user may not create it,
  // or may not read it (the message names the grant); UNAVAILABLE when the
  // database cannot be reached; another code for other database errors.
  absl::Status EnsureTable();

  // A Subscriber handler for messages of `table` (the TableRef given to
  // the Subscriber) that runs `work` with effect at most once per id. The
  // handler refers to this Inbox, which must outlive it (stop the
  // Subscriber first).
  std::function<HandlerResult(const Message&)> Handler(TableRef table,
                                                       InboxWork work);

  // Handles one message (what Handler's handler calls). A failure of the
  // database is a Retry with the table's backoff and the reason
  // "inbox: ..." (also logged); never fails otherwise.
  HandlerResult Process(const TableRef& table, const Message& message,
                        const InboxWork& work);

  // Deletes inbox rows processed more than `retention` ago (by the
  // database's clock, NOW(6)), `options.batch` rows per statement, until
  // none is left; returns the number deleted. The retention must exceed the
  // longest time a message can be redelivered (docs/effectively-once.md).
  // INVALID_ARGUMENT for a retention under 1 microsecond or a batch < 1;
  // the database's error otherwise.
  absl::StatusOr<int64_t> Purge(absl::Duration retention,
                                PurgeOptions options = {});

  Stats stats() const;

 private:
  class Connection;
  explicit Inbox(InboxOptions options);

  // A connection from the pool, or a new one. UNAVAILABLE when it cannot
  // connect.
  absl::StatusOr<std::unique_ptr<Connection>> Acquire();
  // Back to the pool (or closed when the pool is full or `conn` broke).
  void Release(std::unique_ptr<Connection> conn);
  absl::Status EnsureTableOn(Connection& conn);
  HandlerResult DatabaseFailed(const absl::Status& status);
  void Log(absl::string_view text) const;

  // Constant after construction.
  const InboxOptions options_;
  const std::string insert_prefix_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
  bool ready_ ABSL_GUARDED_BY(mu_) = false;  // the table is known to exist

  std::atomic<int64_t> processed_{0};
  std::atomic<int64_t> duplicates_{0};
};

}  // namespace msgq

#endif  // MSGQ_INBOX_H_
