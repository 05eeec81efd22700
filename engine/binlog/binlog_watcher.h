// BinlogWatcher: follows the server's binary log (ROW format) and reports
// committed changes to message tables, so new messages are sent at once
// instead of at the next poll.
//
// It connects as a replica (COM_BINLOG_DUMP opened through Connector/C's
// replication API), starting at the server's current GTID position (or at
// Options::start_gtid), reads
// each event's packet itself (one copy of an event in memory, however large
// its row), and hands the event's bytes to a BinlogDecoder
// (binlog_decoder.h), which
// decodes only the bookkeeping columns (id, priority, time_next,
// time_acked) of the row images of tables its Listener recognises. Rolled
// back transactions never reach the binlog, so everything reported is
// committed. The one exception, an XA transaction's prepared rows (in the
// binlog at XA PREPARE), is held until its XA COMMIT and dropped at its XA
// ROLLBACK (transaction_changes.h); an XA COMMIT of a transaction prepared
// before the stream was followed is answered with OnStreaming(true, "")
// again, so the engine polls for its rows. After a broken connection it resumes
// from the last committed GTID, with capped exponential backoff; each (re)start
// is reported so the engine can poll once to cover any gap.
//
// When the MySQL primary moves (MysqlOptions::primary), the dump ends at
// the next event or heartbeat and resumes on the new primary from the last
// committed GTID.
//
// When the resume GTID no longer exists on the server (binlog purged, RESET
// MASTER, failover: error 1236, or @@gtid_binlog_pos behind the resume
// position, checked at each reconnect and at most once a second while the
// stream idles) it logs once, counts a position reset, and follows from
// the server's current position; the stop/start it reports makes the
// engine poll once to cover the gap. When the server ends the dump because
// another replica connected with the same server id (error 4052), it logs
// one warning naming --binlog_server_id and counts an eviction.
//
// An event the decoder cannot decode (see binlog_decoder.h) is logged once
// per distinct reason and answered with OnStreaming(true, "") again, so the
// engine polls for the rows it may have carried.
//
// After an event over 16 MiB (a huge row) the dump ends at the next commit
// and resumes at once on a new connection, whose buffer is small again.
//
// A network path that dies silently (packets lost, no FIN or RST) is
// noticed within Options::dead_after: the server sends a heartbeat every
// Options::heartbeat_period while it has nothing else to send, so a dump
// that reads nothing for dead_after (several periods) is dead, not idle;
// it is closed and resumed with backoff like any broken stream.
//
// When the server cannot be followed (binary log off, binlog_format not
// ROW, binlog_row_image MINIMAL, missing REPLICATION SLAVE privilege) it
// logs one warning naming the reason and the fix, reports "not streaming",
// and checks again every `recheck_interval`.
//
// Thread-safety: Start/Stop from one thread; status() from any thread; the
// listener is called on the watcher's thread and must not block for long.
#ifndef MSGQ_ENGINE_BINLOG_BINLOG_WATCHER_H_
#define MSGQ_ENGINE_BINLOG_BINLOG_WATCHER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backoff.h"
#include "common/monotonic_cond_var.h"
#include "engine/binlog/bookkeeping_columns.h"
#include "engine/binlog/ddl_statement.h"
#include "engine/queue/row_change.h"
#include "engine/sql/mysql_connection.h"

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
    // A DDL statement created, altered, replaced or renamed these tables,
    // which Columns() does not know (one may be a message table now).
    virtual void OnTablesDefined(const std::vector<TableName>& /*tables*/) {}
    // Following started (true: poll once to cover any gap) or stopped.
    // `reason` says why when it could not start.
    virtual void OnStreaming(bool streaming, const std::string& reason) = 0;
    // A committed TRUNCATE, DROP, ALTER, RENAME or CREATE OR REPLACE named
    // this message table (one the Columns() lookup knows): rows the engine
    // holds for it may no longer exist; reset the table.
    virtual void OnTableReset(const std::string& db, const std::string& table) {
    }
  };

  struct Options {
    MysqlOptions mysql;
    // The replica server id announced to MySQL; must differ from every
    // real replica's and from other msgqd's on the same server.
    uint32_t server_id = 0;
    // Where to start ("d-s-n,..."): after these transactions. Empty: at
    // the server's current position.
    std::string start_gtid;
    // Reconnect delays: common/backoff.h from retry_min doubling to
    // retry_max, +-20% jitter seeded by jitter_seed (0: random); reset once
    // a stream has started.
    absl::Duration retry_min = absl::Milliseconds(100);
    absl::Duration retry_max = absl::Seconds(10);
    uint64_t jitter_seed = 0;
    absl::Duration recheck_interval = absl::Seconds(30);
    // The server's heartbeat on an idle dump (@master_heartbeat_period), and
    // the read timeout of the dump connection: a dump silent this long is
    // dead. dead_after is raised to 3 heartbeat periods if below.
    absl::Duration heartbeat_period = absl::Seconds(1);
    absl::Duration dead_after = absl::Seconds(10);
  };

  // What the watcher is doing, for ListTables and metrics.
  struct Status {
    bool streaming = false;
    uint32_t server_id = 0;
    // Why the stream last stopped or could not start ("" if never).
    std::string last_error;
    // Times the resume position was gone and following restarted from the
    // server's current position.
    int64_t position_resets = 0;
    // Times another replica with the same server id took the dump over.
    int64_t evictions = 0;
    // Last committed GTID per domain ("0-1-42,1-2-7").
    std::string position;
    // The timestamp (1 s resolution, the server's clock) of the last event
    // read from the stream, heartbeats aside; InfinitePast before the first.
    absl::Time last_event_time = absl::InfinitePast();
    // Seconds behind the binlog while streaming: now - last_event_time
    // while events arrive, 0 once the server sent a heartbeat (it sends one
    // after a second with nothing to send: the watcher is caught up) and 0
    // before the first event; never negative (clock skew). 0 when not
    // streaming (see `streaming`).
    double lag_seconds = 0;
  };

  BinlogWatcher(Options options, Listener* listener);
  ~BinlogWatcher();
  BinlogWatcher(const BinlogWatcher&) = delete;
  BinlogWatcher& operator=(const BinlogWatcher&) = delete;

  void Start();
  // Stops following (closes the dump connection) and joins the thread.
  void Stop();

  // A snapshot; lag_seconds is computed against absl::Now(). Thread-safe.
  Status status() const;
  // The lag of `status` at `now` as status() computes it (for tests).
  static double LagSeconds(const Status& status, bool caught_up,
                           absl::Time now);

  // A default server id unlikely to collide, even between two msgqd in
  // containers (same pid 1, maybe the same host name and address): a hash
  // of the host name, `listen_address`, the pid and a random value drawn
  // once per call. Logged by the watcher when it starts following.
  static uint32_t DefaultServerId(const std::string& listen_address = "");
  // The derivation itself: never 0; the same inputs give the same id within
  // one process (absl::Hash is seeded per process).
  static uint32_t DeriveServerId(const std::string& host,
                                 const std::string& listen_address, int64_t pid,
                                 uint64_t random);
  // True if a stream resumed at `resume` ("d-s-n,..." GTIDs) cannot exist in
  // a server whose @@gtid_binlog_pos is `server`: some domain of `resume` is
  // missing there or has a lower sequence number (RESET MASTER, failover).
  static bool PositionGone(const std::string& resume,
                           const std::string& server);
  // Whether a consistent snapshot taken now includes the transaction of
  // `gtid` ("d-s-n"), i.e. every read that starts after a true answer sees
  // its rows (MariaDB's Binlog_snapshot_file/_position, as a GTID list by
  // BINLOG_GTID_POS). A binlog event reaches the dump before its
  // transaction is visible to reads. Opens `*control` when needed; an error
  // when the server cannot tell (no such status: MySQL).
  static absl::StatusOr<bool> SnapshotIncludes(
      const std::string& gtid, const MysqlOptions& mysql,
      std::unique_ptr<MysqlConnection>* control);

 private:
  // What follows a stream that ended: how long to wait, and whether the
  // resume position was dropped (binlog_watcher.cc).
  struct Retry {
    absl::Duration wait;
    bool position_reset = false;
  };
  class Dump;  // one dump's event loop (binlog_watcher_dump.cc)

  // ---- The thread and retries (binlog_watcher.cc) ----
  void Run();
  bool Stopping() const;
  // Logs what `status` needs (once per distinct problem) and decides the
  // wait; `just_reset`: the position was reset and no stream started since.
  Retry PlanRetry(const absl::Status& status, const std::string& last_problem,
                  Backoff* backoff, bool* just_reset);
  std::string ConnectState() const;
  void SetStreaming(bool streaming);

  // ---- One dump (binlog_watcher_dump.cc) ----
  // Streams until an error or Stop(). FAILED_PRECONDITION: the server
  // cannot be followed as configured; OUT_OF_RANGE: the resume position is
  // gone; ALREADY_EXISTS: evicted; UNAVAILABLE: retry.
  absl::Status StreamOnce();
  // The dump connection's options (read timeout dead_after).
  MysqlOptions DumpOptions() const;
  // Checks the server can be followed and, without a resume position,
  // starts at the server's current one. Errors as StreamOnce.
  absl::Status CheckServer(MysqlConnection& conn);
  // The session variables a MariaDB dump reads (heartbeat, checksum,
  // GTID start). UNAVAILABLE when the connection fails.
  absl::Status PrepareDump(MysqlConnection& conn);

  // ---- Positions (binlog_watcher_position.cc) ----
  // OUT_OF_RANGE if the server's @@gtid_binlog_pos shows the resume
  // position is gone; opens `*control` when needed. OK when it cannot tell.
  absl::Status CheckPosition(const MysqlOptions& mysql,
                             std::unique_ptr<MysqlConnection>* control);
  // Sets resume_ from a "d-s-n,..." list (the server's current position).
  void ResumeFrom(const std::string& gtid_list);

  const Options options_;
  Listener* const listener_;

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int socket_ ABSL_GUARDED_BY(mu_) = -1;  // of the dump connection
  Status status_ ABSL_GUARDED_BY(mu_);
  // True since the last heartbeat (nothing left to read), false while
  // events arrive: lag_seconds is 0 when true.
  bool caught_up_ ABSL_GUARDED_BY(mu_) = true;
  std::thread thread_;

  // Watcher thread only: last committed GTID per replication domain.
  std::map<uint32_t, std::string> resume_;
  bool stream_started_ = false;
  int64_t evictions_logged_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_BINLOG_WATCHER_H_
