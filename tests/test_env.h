// Test environment for integration tests: a private MariaDB started with
// tools/mariadb-private in a temporary directory, a real msgqd process, and a
// gRPC stream collector. Everything is torn down in destructors. The process
// control itself lives in tools/launch (shared with the bench); these wrap it
// with test defaults and temporary directories.
//
// Example:
//   auto db = PrivateMariaDb::Start({});
//   ASSERT_TRUE(db.ok());
//   (*db)->Exec("CREATE DATABASE app");
//   auto server = Msgqd::Start(**db, {"--databases=app"});
//   auto stub = (*server)->Stub();
#ifndef MSGQ_TESTS_TEST_ENV_H_
#define MSGQ_TESTS_TEST_ENV_H_

#include <signal.h>

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_connection.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/owned_dir.h"
#include "tools/launch/private_mariadb.h"

namespace msgq::testing {

// Every directory the harness creates is /tmp/<kTempPrefix>*, owned by the
// test process (launch::OwnedDir): removed on a normal exit, and swept (with
// the servers still running in it) by the next test process after a crash.
inline constexpr char kTempPrefix[] = "msgq-test-";

// The comment of a message table with the given overrides, e.g.
// MessageComment("vt_ack_wait=1") keeps the other defaults.
std::string MessageComment(const std::string& overrides = "");

// CREATE TABLE statement of a message table shaped like schema/'s.
std::string MessageTableDdl(const std::string& name, const std::string& comment,
                            const std::string& extra_columns = "");

int64_t NowNanos();
// A TCP port on 127.0.0.1 that nobody listens on now, for a program that
// cannot report the port it got from port 0 (0 when none was found). Another
// process may take it before the caller binds it.
int FreeLoopbackPort();

// A MariaDB server for one test: a private one, started for it and killed
// with it, or one borrowed from the pool of the test processes of one ctest
// run (Options::shared). A borrowed server is the test's alone while it
// lives: no other test uses it meanwhile. It looks freshly started: no
// databases but the system ones, the users, grants and global variables of
// a fresh server, a reset binlog (binlog.000001, GTID 0-1-2 as after a
// start) and no other connection. Its destructor gives it back only when it
// still looks so after dropping the test's databases (and RESET MASTER);
// otherwise (a variable set, a user made, a Stop(), Kill() or Restart(), a
// connection left) the server is killed like a private one. What it keeps
// from earlier borrowers: its process (uptime, status counters, connection
// and InnoDB ids), its port, socket and dir(), mariadbd.err.
//
// The pool: /tmp/msgq-test-pool-OWNER-binlog|nobinlog-N, OWNER the ctest
// process (or this process when not run by ctest); each server has a keeper
// (tools/mariadb-private keep) that kills it once OWNER exited or nobody
// borrowed it for kPoolIdle. Borrow and give back are a few statements
// (tens of milliseconds) against a server's start (1-2 s on a loaded
// machine). MSGQ_TEST_SERVER_POOL=off in the environment gives every test a
// private server. See docs/testing.md#the-private-mariadb-and-repeat-runs.
class PrivateMariaDb {
 public:
  struct Options {
    bool binlog = true;
    std::vector<std::string> extra_args;  // passed to mariadbd
    // NAME=VALUE, in mariadbd's environment only (e.g. libfaketime's), at
    // every start and Restart().
    std::vector<std::string> env;
    // Borrow a server from the pool (above) when one is free, start one
    // into the pool otherwise. Ignored with extra_args or env (those get a
    // private server).
    bool shared = false;
  };
  // How long an unused pooled server waits for its next borrower.
  static constexpr absl::Duration kPoolIdle = absl::Seconds(10);

  static absl::StatusOr<std::unique_ptr<PrivateMariaDb>> Start(Options options);
  ~PrivateMariaDb();

  // True when the server is borrowed from the pool.
  bool shared() const { return slot_lock_fd_ >= 0; }

  // Stops the server (clean shutdown). Restart() starts it with the same
  // socket and data, on the same port when it is still free and on another
  // one otherwise: port() and mysql_options() follow, msgqd uses the socket.
  absl::Status Stop();
  // SIGKILL: a crash (the test's connection goes with it).
  absl::Status Kill();
  absl::Status Restart();

  const std::string& socket() const { return server_->socket(); }
  // Holds the data, the socket and mariadbd.pid; removed with this object
  // (a borrowed server's: by its keeper, when the server ends).
  const std::string& dir() const { return dir_path_; }
  int port() const { return server_->port(); }
  MysqlOptions mysql_options() const;

  // Runs SQL on the test's own connection (reconnecting when needed).
  absl::Status Exec(const std::string& sql);
  absl::StatusOr<QueryResult> Query(const std::string& sql);
  // The single value of a one-row, one-column query (CHECK-fails otherwise).
  std::string Scalar(const std::string& sql);
  // A fresh connection (e.g. to hold a transaction open).
  absl::StatusOr<std::unique_ptr<MysqlConnection>> Connect() const;

 private:
  PrivateMariaDb() = default;

  // Borrows a free server of the pool or starts one into it; nullptr when
  // all slots are taken (the caller starts a private server then).
  static absl::StatusOr<std::unique_ptr<PrivateMariaDb>> Borrow(
      const Options& options);
  // Starts a server into the empty slot `path` (made by the caller).
  static absl::StatusOr<std::unique_ptr<PrivateMariaDb>> StartIntoPool(
      const std::string& path, const Options& options);
  // Takes slot `path` when it is free and its server clean; nullptr if not.
  static std::unique_ptr<PrivateMariaDb> TryBorrow(const std::string& path,
                                                   const Options& options);
  // The server's users, grants and global variables (less its GTIDs): what
  // a borrower may not change.
  absl::StatusOr<std::string> Fingerprint();
  // Drops the borrower's databases and resets the binlog when the server is
  // as borrowed; false when it must be killed instead.
  bool Clean();
  // Gives a borrowed server back (clean) or kills it.
  void GiveBack();

  std::unique_ptr<launch::OwnedDir> dir_;
  std::string dir_path_;
  launch::PrivateMariaDb::Options launch_options_;
  std::unique_ptr<launch::PrivateMariaDb> server_;
  std::unique_ptr<MysqlConnection> conn_;
  // A borrowed server's: a shared flock on DIR/.owner.lock (no sweep takes
  // the directory), an exclusive one on DIR/slot.lock (no other borrower).
  int owner_lock_fd_ = -1;
  int slot_lock_fd_ = -1;
  bool touched_ = false;  // Stop(), Kill() or Restart() was called
};

class Msgqd {
 public:
  // Starts build/server/msgqd against `db` with --listen=127.0.0.1:0 and
  // `args` (and `env`, NAME=VALUE, in its environment), waiting until it
  // prints its listening line.
  static absl::StatusOr<std::unique_ptr<Msgqd>> Start(
      const PrivateMariaDb& db, const std::vector<std::string>& args,
      const std::vector<std::string>& env = {});
  // Runs msgqd like Start() does and waits up to `timeout` for it to exit
  // by itself (the ways it refuses to start). Returns its exit code, or -1
  // when it was still running (then killed); `log` gets what it wrote.
  static int RunUntilExit(const PrivateMariaDb& db,
                          const std::vector<std::string>& args,
                          absl::Duration timeout, std::string* log);
  ~Msgqd();

  const std::string& address() const { return process_->address(); }
  // The port of address().
  int port() const;
  pid_t pid() const { return process_->pid(); }
  // Holds msgqd.log; removed with this object.
  const std::string& dir() const { return dir_->path(); }
  std::unique_ptr<v1::Messaging::Stub> Stub() const;
  // `sig` (SIGTERM or SIGINT); returns the exit status (-1 if it had to be
  // killed).
  int Terminate(absl::Duration timeout = absl::Seconds(10), int sig = SIGTERM);
  // SIGKILL, no cleanup.
  void Kill();
  // What msgqd wrote on stderr so far.
  std::string Log() const;

 private:
  Msgqd() = default;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::unique_ptr<launch::MsgqdProcess> process_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Reads one MessageStream on a thread of its own and collects what arrives.
class StreamCollector {
 public:
  StreamCollector(v1::Messaging::Stub* stub, const std::string& name,
                  const std::string& keyspace = "");
  // A stream of `request` as given (e.g. with a group or max_unacked).
  StreamCollector(v1::Messaging::Stub* stub, v1::MessageStreamRequest request);
  ~StreamCollector();  // cancels and joins

  // Waits until at least `n` rows in total arrived; false on timeout.
  bool WaitForRows(size_t n, absl::Duration timeout);
  // Waits until the stream ended; false on timeout.
  bool WaitForEnd(absl::Duration timeout);
  // Waits until the first response (fields) arrived.
  bool WaitForFields(absl::Duration timeout);
  void Cancel();

  grpc::Status status() const;
  std::vector<v1::MessageStreamResponse> responses() const;
  // Column 0 (the id) of every row, in arrival order.
  std::vector<std::string> ids() const;
  size_t row_count() const;
  // The value of column `col` of every row (NULL as "<NULL>").
  std::vector<std::string> column(int col) const;

 private:
  void Run();

  grpc::ClientContext context_;
  v1::Messaging::Stub* stub_;
  v1::MessageStreamRequest request_;
  mutable absl::Mutex mu_;
  std::vector<v1::MessageStreamResponse> responses_ ABSL_GUARDED_BY(mu_);
  size_t rows_ ABSL_GUARDED_BY(mu_) = 0;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Column `col` of a packed row.
std::string RowValue(const v1::Row& row, int col);

// Acks ids on `table`; returns the RPC status and sets *acked.
grpc::Status AckIds(v1::Messaging::Stub* stub, const std::string& table,
                    const std::vector<std::string>& ids, int64_t* acked,
                    const std::string& keyspace = "");

// ListTables entry of `table` (default TableStatus if absent).
v1::TableStatus FindTable(v1::Messaging::Stub* stub, const std::string& table,
                          const std::string& keyspace = "msgq");

// Polls `predicate` every 20 ms until true or timeout (for state owned by
// other processes, where no notification exists).
template <typename F>
bool Eventually(F predicate, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (predicate()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return predicate();
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_TEST_ENV_H_
