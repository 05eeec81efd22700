// MysqlPrimaryMonitor: notices within a second that the MySQL primary of
// MysqlOptions::primary turned read-only (a switchover), even for a user
// whose privileges let it write to a read-only server, and logs every move
// of the primary.
//
// A thread of its own, with one connection of its own (to the primary, as
// MysqlConnection::Connect finds it): every `interval` it runs
// `SELECT @@read_only`; a 1 calls MysqlPrimary::Lost() for that server, so
// every connection to it goes stale and reconnects to the writable one. A
// failed check drops the connection; the next check connects afresh.
//
// Thread-safety: Start/Stop from one thread (the destructor stops).
#ifndef MSGQ_ENGINE_SQL_MYSQL_PRIMARY_MONITOR_H_
#define MSGQ_ENGINE_SQL_MYSQL_PRIMARY_MONITOR_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

class MysqlPrimaryMonitor {
 public:
  // `options.primary` is set.
  MysqlPrimaryMonitor(MysqlOptions options, absl::Duration interval);
  ~MysqlPrimaryMonitor();
  MysqlPrimaryMonitor(const MysqlPrimaryMonitor&) = delete;
  MysqlPrimaryMonitor& operator=(const MysqlPrimaryMonitor&) = delete;

  void Start();
  void Stop();

 private:
  void Loop();
  // One check on conn_ (connecting first when needed).
  void CheckOnce();

  const MysqlOptions options_;
  const absl::Duration interval_;
  std::unique_ptr<MysqlConnection> conn_;  // the monitor thread's only
  std::string last_primary_;               // the monitor thread's only
  absl::Mutex mu_;
  absl::CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_PRIMARY_MONITOR_H_
