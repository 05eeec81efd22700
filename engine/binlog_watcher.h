// BinlogWatcher: follows the server's binary log (ROW format) and reports
// committed changes to message tables, so new messages are sent at once
// instead of at the next poll.
//
// It connects as a replica (COM_BINLOG_DUMP through Connector/C's
// replication API), starting at the server's current GTID position, and
// hands each event's bytes to a BinlogDecoder (binlog_decoder.h), which
// decodes only the bookkeeping columns (id, priority, time_next,
// time_acked) of the row images of tables its Listener recognises. Rolled
// back transactions never reach the binlog, so everything reported is
// committed. After a broken connection it resumes from the last committed
// GTID, with capped exponential backoff; each (re)start is reported so the
// engine can poll once to cover any gap.
//
// When the server cannot be followed (binary log off, binlog_format not
// ROW, binlog_row_image MINIMAL, missing REPLICATION SLAVE privilege) it
// logs one warning naming the reason and the fix, reports "not streaming",
// and checks again every `recheck_interval`.
//
// Thread-safety: Start/Stop from one thread; the listener is called on the
// watcher's thread and must not block for long.
#ifndef MSGQ_ENGINE_BINLOG_WATCHER_H_
#define MSGQ_ENGINE_BINLOG_WATCHER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/mysql_connection.h"
#include "engine/row_change.h"

namespace msgq {

class BinlogWatcher {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    // The bookkeeping columns of `db`.`table` if it is a loaded message
    // table; nullopt makes the watcher skip its rows.
    virtual std::optional<BookkeepingColumns> Columns(
        const std::string& db, const std::string& table) = 0;
    // Committed changes of one rows event.
    virtual void OnRowChanges(const std::string& db, const std::string& table,
                              std::vector<RowChange> changes) = 0;
    // Following started (true: poll once to cover any gap) or stopped.
    // `reason` says why when it could not start.
    virtual void OnStreaming(bool streaming, const std::string& reason) = 0;
  };

  struct Options {
    MysqlOptions mysql;
    // The replica server id announced to MySQL; must differ from every
    // real replica's and from other msgqd's on the same server.
    uint32_t server_id = 0;
    absl::Duration retry_min = absl::Milliseconds(100);
    absl::Duration retry_max = absl::Seconds(10);
    absl::Duration recheck_interval = absl::Seconds(30);
  };

  BinlogWatcher(Options options, Listener* listener);
  ~BinlogWatcher();
  BinlogWatcher(const BinlogWatcher&) = delete;
  BinlogWatcher& operator=(const BinlogWatcher&) = delete;

  void Start();
  // Stops following (closes the dump connection) and joins the thread.
  void Stop();

  // A default server id unlikely to collide: high bits fixed, low bits from
  // the process id.
  static uint32_t DefaultServerId();

 private:
  void Run();
  // Streams until an error or Stop(). FAILED_PRECONDITION: the server
  // cannot be followed as configured; UNAVAILABLE: retry.
  absl::Status StreamOnce();
  std::string ConnectState() const;

  const Options options_;
  Listener* const listener_;

  absl::Mutex mu_;
  absl::CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int socket_ ABSL_GUARDED_BY(mu_) = -1;  // of the dump connection
  std::thread thread_;

  // Watcher thread only: last committed GTID per replication domain.
  std::map<uint32_t, std::string> resume_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_WATCHER_H_
