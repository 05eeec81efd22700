// Engine: every message table of the configured databases, each run by its
// own MessageManager, kept in step with the schema.
//
// Start() loads the schema once (a MySQL outage at start is not fatal: the
// engine keeps retrying) and then reloads it every reload_interval on a
// thread of its own: new message tables get a manager; a table whose
// definition (comment or columns) changed gets a new manager and the old
// one's streams end with UNAVAILABLE; a dropped table's manager stops; a
// table that fails to load is kept with its error and affects only itself.
//
// New messages are learned of from the binlog when the server allows it
// (see binlog_watcher.h), otherwise by polling every vt_poller_interval.
//
// Thread-safety: all methods are thread-safe. No lock is held across MySQL.
#ifndef MSGQ_ENGINE_ENGINE_H_
#define MSGQ_ENGINE_ENGINE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/monotonic_cond_var.h"
#include "engine/binlog/binlog_watcher.h"
#include "engine/db_clock.h"
#include "engine/engine_group_feed.h"
#include "engine/groups/group_spec.h"
#include "engine/groups/mysql_group_store.h"
#include "engine/lease/lease_keeper.h"
#include "engine/lease/ownership_keeper.h"
#include "engine/lease/table_ownership.h"
#include "engine/queue/manager/message_manager.h"
#include "engine/queue/message_counts.h"
#include "engine/queue/redelivery_backoff.h"
#include "engine/queue/round_executor.h"
#include "engine/serial_worker.h"
#include "engine/sql/mysql_connection.h"
#include "engine/sql/mysql_pool.h"
#include "engine/sql/mysql_primary_monitor.h"
#include "engine/sql/schema_loader.h"

namespace msgq {

class Engine : private BinlogWatcher::Listener {
 public:
  struct Options {
    MysqlOptions mysql;
    // The databases served, in the order an empty keyspace searches them.
    std::vector<std::string> databases;
    absl::Duration reload_interval = absl::Seconds(10);
    MessageManager::Options manager;
    // MySQL connections msgqd may hold at once, all tables together
    // (--mysql_max_connections): the binlog follower takes 2 of them (its
    // dump and a control connection), the lease keeper 1, the primary
    // monitor 1 (with several MySQL servers), the rest form the pool every
    // table's rounds and the schema reloads borrow from. At least 3 with
    // the binlog, 1 without.
    int max_connections = 8;
    // Follow the binlog for instant delivery (falls back to polling when the
    // server does not allow it).
    bool binlog = true;
    uint32_t binlog_server_id = BinlogWatcher::DefaultServerId();
    // Names this msgqd in lease rows (--instance_id); one process at a
    // time (lease_keeper.h). May be left empty and given by Identify().
    std::string instance_id;
    // Who else may send these tables, and how this engine keeps out of
    // their way. msgqd chooses kLeases, or kInstanceLock with
    // --leases=false (server/msgqd_flags.cc); an engine embedded in a
    // test or a tool that is alone on its tables keeps kAlone.
    enum class Sharing {
      // This engine sends every table it loads; nothing else may.
      kAlone,
      // Each table is sent by the one instance holding its lease in MySQL
      // (engine/lease/lease_keeper.h). Takes one more MySQL connection, the
      // keeper's own. The lease rows live in the first of `databases`.
      kLeases,
      // One instance per set of databases sends; any other waits, idle
      // (engine/lease/instance_lock.h). Takes one MySQL connection of its
      // own.
      kInstanceLock,
    };
    Sharing sharing = Sharing::kAlone;
    // How long a lease lasts; the keeper's rounds run every fifth of it.
    absl::Duration lease_duration = absl::Seconds(5);
    std::string address;  // --listen, written in the heartbeat row
    // Health() is UNAVAILABLE while MySQL has left a statement of msgqd's
    // unanswered for longer than this (mysql_activity.h); mysql.activity is
    // made with it unless set.
    absl::Duration mysql_stall_timeout = absl::Seconds(10);
    // Exact counts by state per table (engine_counts.cc): loaded by one
    // counting read, kept from the binlog, read again every
    // counts_reconcile (and at once when changes may have been missed).
    // When on, managers do not count their dead rows themselves.
    bool exact_counts = true;
    absl::Duration counts_reconcile = absl::Minutes(10);
    MessageCounts::Options counts;
  };

  struct TableInfo {
    std::string keyspace;
    std::string name;
    bool loaded = false;
    std::string error;
    TableSettings settings;  // when loaded
    MessageManager::Stats stats;
    std::string discovery = "poll";
    TableOwnership ownership;
    // Exact counts by state (Options::exact_counts), at the time of the
    // call; nullopt until the first counting read. stats.dead is their
    // dead count when set.
    std::optional<MessageCounts::Counts> counts;
  };

  // A consumer group's delivery state at the time of GroupLags(), for
  // /metrics and the console.
  struct GroupLag {
    std::string keyspace;
    std::string table;
    std::string group;
    // Committed inserts above the group's floor not acked by the group
    // (queued or held by a stream).
    int64_t messages = 0;
    // Of those, held by the group's streams (sent, not acked).
    int64_t in_flight = 0;
    // The rows event timestamp (Unix ns, the binlog's 1 s resolution) of
    // the oldest of those messages; 0 when there is none.
    int64_t oldest_event_ns = 0;
    // MySQL's clock at the time of the call (Unix ns), to age it with.
    int64_t now_ns = 0;
  };

  // The connections of the pool for `options` (max_connections less the
  // binlog follower's, the lease keeper's and the primary monitor's), at
  // least 1.
  static int PoolSize(const Options& options);

  // `clock` gives the monotonic time; "now" for due times is MySQL's,
  // measured once a second (clock()).
  Engine(Options options, Clock* clock, JitterSource* jitter);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Names this msgqd (Options::instance_id) and the address written in its
  // heartbeat row, when they are known only after construction (msgqd
  // binds its gRPC port first: server/msgqd_server.h). Call before Start().
  void Identify(std::string instance_id, std::string address);
  // Loads the schema once and starts the reload thread. Returns the first
  // load's status (UNAVAILABLE when MySQL is unreachable); the engine runs
  // either way and keeps retrying. With leases, first checks that MySQL
  // lets this msgqd create and write its lease tables
  // (OwnershipKeeper::Check): FAILED_PRECONDITION with the message for the
  // operator (the GRANT to run, or --leases=false) when it does not, and
  // nothing is started (the caller should exit); a MySQL that cannot be
  // reached is not checked then (the keeper keeps trying).
  absl::Status Start();
  // Stops the reload thread and every manager, in parallel; their streams
  // end with UNAVAILABLE "server shutting down" and each flushes its
  // pending postpones and acks. Returns false when that did not finish
  // within `timeout` (a MySQL that hangs): the caller should then exit the
  // process without destroying the engine, as stopping threads still use
  // it. A manager whose postpones or acks wait for rows another
  // transaction keeps locked is waited for past `timeout`: until the ack
  // wait of those rows' sends has run out at the latest
  // (MessageManager::StopFence), and then `timeout` more for a write then
  // in progress (docs/design/locked-rows.md#stopping).
  // Idempotent.
  bool Stop(absl::Duration timeout = absl::Seconds(10));
  // Reloads the schema now (also run by the reload thread).
  absl::Status Reload();

  // Now on MySQL's clock, carried on the monotonic one (db_clock.h): what
  // time_next and time_acked are compared with. Thread-safe.
  Clock* clock() const { return clock_; }

  // The manager of a loaded table. Keyspace "" (as Vitess allows when the
  // name is unique) means the first configured database that has a message
  // table by that name, in --databases order.
  // INVALID_ARGUMENT: empty name. NOT_FOUND: keyspace not served, or no
  // message table by that name. FAILED_PRECONDITION: the table failed to
  // load (the message says why). UNAVAILABLE: the schema could not be read
  // yet (MySQL unreachable) or the engine is stopping.
  absl::StatusOr<std::shared_ptr<MessageManager>> Find(
      absl::string_view keyspace, absl::string_view name) const;

  // Every message table, loaded or not, ordered by keyspace then name.
  std::vector<TableInfo> ListTables() const;
  // Every loaded consumer group's GroupLag, by keyspace, table and group
  // (engine_group_lags.cc). Reads each feed's state under its lock (a walk
  // over its unsettled messages); no MySQL. Thread-safe.
  std::vector<GroupLag> GroupLags() const ABSL_LOCKS_EXCLUDED(groups_mu_);
  // Readiness: OK once the schema has been loaded and the latest schema
  // read succeeded; UNAVAILABLE, saying why, before the first load, while
  // MySQL does not answer the schema reads (noticed within reload_interval),
  // while it leaves msgqd's statements unanswered past mysql_stall_timeout
  // or refuses its writes as read-only (MysqlActivity::Health, the server's
  // read-only state read once a second with its clock) and once Stop()
  // began.
  absl::Status Health() const;
  // This instance's view of who sends `manager`'s table (the ownership
  // keeper's, in memory: no MySQL); state "off" when the engine is alone
  // on its tables.
  TableOwnership Ownership(const MessageManager& manager) const;
  // This msgqd's instance id, as written in lease rows (Options, or
  // Identify()).
  std::string instance_id() const;
  // The databases served, in the order an empty keyspace searches them.
  const std::vector<std::string>& databases() const {
    return options_.databases;
  }
  // What the binlog watcher is doing (default when --binlog=false).
  BinlogWatcher::Status binlog_status() const;

  // The exact counts (Options::exact_counts) of a loaded table now, from
  // memory (engine_counts.cc). Errors as Find(); UNAVAILABLE "counts of
  // `K`.`T` are not loaded yet" before its first counting read;
  // FAILED_PRECONDITION when exact counts are off.
  absl::StatusOr<MessageCounts::Counts> TableCounts(
      absl::string_view keyspace, absl::string_view name) const;
  // Runs `changed(keyspace, table)` whenever that table's exact counts may
  // have changed: after the binlog's row changes to it were applied,
  // after a counting read installed new counts, and after the counts were
  // dropped (the table is gone or failed to load). It runs on the binlog
  // watcher's or the counts thread, outside the engine's lock, and must
  // not block or call Add/RemoveCountsListener. Returns an id for
  // RemoveCountsListener, after which `changed` no longer runs (a call in
  // progress is waited for).
  using CountsListener = std::function<void(const std::string& keyspace,
                                            const std::string& table)>;
  uint64_t AddCountsListener(CountsListener changed);
  void RemoveCountsListener(uint64_t id);

  // Pauses or resumes a table for every msgqd serving it (engine_pause.cc):
  // writes the state to MySQL (msgq_paused in the first of `databases`,
  // engine/sql/mysql_pause_store.h), then applies it here at once; other
  // instances apply it at their next schema reload (within
  // reload_interval), and a restarted one before its first send. `done`
  // runs once: inline with Find()'s errors (INVALID_ARGUMENT for an empty
  // name, NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE), else on a thread of
  // the engine's after the write, with the write's status (UNAVAILABLE
  // when MySQL cannot be reached). Never blocks.
  void SetPaused(absl::string_view keyspace, absl::string_view name,
                 bool paused, std::function<void(absl::Status)> done);

  // Consumer groups (engine_groups.cc; docs/design/consumer-groups.md):
  // their rows in msgq_groups of each table's database
  // (engine/groups/mysql_group_store.h). Each `done` runs once: inline with
  // the errors found without MySQL, else on a thread of the engine's after
  // the statements (UNAVAILABLE when MySQL cannot be reached). Never block.
  //
  // CreateGroup: a group of a loaded table. Errors: Find()'s; PlanGroup's
  // (INVALID_ARGUMENT for the name, the filter or --from; UNIMPLEMENTED for
  // --from=time:); for --from=latest, FAILED_PRECONDITION when the server
  // has no binlog GTID position; for --from=gtid:, INVALID_ARGUMENT when the
  // binlog has not reached it; ALREADY_EXISTS for a group of that name.
  // Gives the row as stored (floor: "" for earliest, the server's
  // @@gtid_binlog_pos for latest, the list for gtid:).
  void CreateGroup(absl::string_view keyspace, absl::string_view name,
                   GroupSpec spec,
                   std::function<void(absl::StatusOr<GroupRow>)> done);
  // ListGroups: the groups of one table (`name`; Find()'s errors, so a
  // table that is not loaded is not listed), or with an empty name, those
  // in `keyspace` (NOT_FOUND when not served) or, when that is empty too,
  // in every served database, whatever their tables' state; by keyspace
  // (in --databases order), table and name.
  void ListGroups(
      absl::string_view keyspace, absl::string_view name,
      std::function<void(absl::StatusOr<std::vector<GroupRow>>)> done);
  // DeleteGroup: deletes the group and its exceptions. The table is found
  // as Find() does; a table that is not a loaded message table any more
  // may still have groups deleted when `keyspace` names a served database.
  // INVALID_ARGUMENT for a malformed group name; NOT_FOUND "group "G" of
  // `db`.`t` not found; its groups: ..." (or "it has none") when there is
  // no such group.
  void DeleteGroup(absl::string_view keyspace, absl::string_view name,
                   absl::string_view group,
                   std::function<void(absl::Status)> done);

  // Live delivery to consumer groups (engine_groups.cc): each loaded group
  // has a GroupFeed, fed from the binlog; its floor is written to
  // msgq_groups by the acks that move it. Groups are read from MySQL at
  // Start() (retried at each reload until it succeeds) and follow this
  // msgqd's CreateGroup and DeleteGroup.
  //
  // FindGroup: the feed of a group of a loaded table. Errors: Find()'s;
  // INVALID_ARGUMENT for a malformed group name; NOT_FOUND "group "G" of
  // `db`.`t` not found; its groups: ..." (or "it has none").
  absl::StatusOr<std::shared_ptr<GroupFeed>> FindGroup(
      absl::string_view keyspace, absl::string_view name,
      absl::string_view group) const;
  // GroupDeliverable: OK when the binlog's row images give `table`'s rows
  // to its groups; FAILED_PRECONDITION saying why not (the binlog or row
  // images are off: --binlog, --binlog_discovery=image; or the table's
  // streamed columns cannot be rendered from an image, or it has
  // msgq_order_by or msgq_concurrency_by: reading rows by id for a group
  // is not built yet).
  absl::Status GroupDeliverable(const MessageTable& table) const;
  // AckGroup: settles `ids` for the group and, when that moved its floor,
  // writes the floor (one UPDATE of msgq_groups) before `done` runs with
  // the count settled (0 for ids not pending). Errors: FindGroup's, inline;
  // the write's (UNAVAILABLE when MySQL cannot be reached: the acks are
  // kept in memory, a retry counts 0 and writes the floor again).
  void AckGroup(absl::string_view keyspace, absl::string_view name,
                absl::string_view group, std::vector<std::string> ids,
                std::function<void(absl::StatusOr<int64_t>)> done);
  // A group's exceptions (docs/design/consumer-groups.md#slice-3-exceptions).
  // Each answers through `done` exactly once, with FindGroup's errors
  // inline, and, once its rows of msgq_group_messages are written, the
  // write's (UNAVAILABLE when MySQL cannot be reached: the change is kept
  // in memory and written by a later flush).
  //
  // NackGroup: as MessageManager::Nack, on the group's state: only
  // deliveries whose sends are still epoch + 1 count; retried after
  // `delay` (nullopt: the table's backoff for the epoch) or dead (`dead`,
  // msgq_max_attempts, msgq_max_age). INVALID_ARGUMENT for a delay out of
  // range or too many deliveries.
  void NackGroup(absl::string_view keyspace, absl::string_view name,
                 absl::string_view group,
                 std::vector<MessageManager::Delivery> deliveries,
                 std::optional<absl::Duration> delay, std::string reason,
                 bool dead,
                 std::function<void(absl::StatusOr<NackCount>)> done);
  // RedriveGroup: the group's dead messages `ids` (or all) are due now
  // with their sends reset to 0; `done` gets how many. INVALID_ARGUMENT
  // when both or neither of ids and all are given.
  void RedriveGroup(absl::string_view keyspace, absl::string_view name,
                    absl::string_view group, std::vector<std::string> ids,
                    bool all,
                    std::function<void(absl::StatusOr<int64_t>)> done);
  // ListDeadGroup: the group's dead messages with id > after_id (byte
  // order of the text form), at most `limit` (1..10000, else
  // INVALID_ARGUMENT), read from msgq_group_messages; epoch is the sends
  // before it died, time_created 0.
  void ListDeadGroup(
      absl::string_view keyspace, absl::string_view name,
      absl::string_view group, std::string after_id, int limit,
      std::function<void(absl::StatusOr<std::vector<DeadRow>>)> done);

  // Read-only looks at a table for the console and metrics (engine_peek.cc).
  // Runs the one SELECT that `build` makes from the loaded table's
  // definition (through engine/sql/ helpers, e.g. peek_statement.h) on a
  // connection of the engine's pool, and returns its rows buffered. Errors:
  // as Find(); whatever `build` returns; RESOURCE_EXHAUSTED when no pool
  // connection came free within `wait`; the statement's own
  // (mysql_connection.h). Blocks for the round trip: call it from an HTTP
  // worker or a sampler thread, never a gRPC reaction or a round.
  absl::StatusOr<QueryResult> ReadTable(
      absl::string_view keyspace, absl::string_view name,
      const std::function<absl::StatusOr<std::string>(const MessageTable&)>&
          build,
      absl::Duration wait = absl::Seconds(1)) const;
  // The console's one-statement change of a table's dead rows (deleting
  // them: engine/sql/peek_statement.h), as ReadTable runs a read; returns
  // the rows it changed. The binlog then tells the managers and the counts,
  // as for any other writer's change. Errors as ReadTable.
  absl::StatusOr<uint64_t> WriteTable(
      absl::string_view keyspace, absl::string_view name,
      const std::function<absl::StatusOr<std::string>(const MessageTable&)>&
          build,
      absl::Duration wait = absl::Seconds(1)) const;

 private:
  // A manager for `table` on the pool and executor (engine_manager.cc).
  // `successor`: it replaces a manager of the same table (which may have
  // sent rows whose binlog images are still to come; see
  // ManagerOptions::image_wait).
  std::shared_ptr<MessageManager> NewManager(MessageTable table,
                                             bool successor);
  struct Entry {
    TableDefinition definition;
    std::shared_ptr<MessageManager> manager;  // null when failed
    std::string error;
  };
  using Key = std::pair<std::string, std::string>;

  // What a reload changes (engine_reload.cc).
  struct ReloadPlan {
    std::vector<TableDefinition> changed;  // new or redefined
    std::vector<Key> removed;
    std::vector<Key> restarted;  // reset by the binlog (logged)
    std::set<Key> successors;    // replace a manager of the same table
  };

  void ReloadLoop();
  // Loads and reconciles every loaded table's counts until stopping
  // (engine_counts.cc); CountTable is one counting read.
  void CountsLoop();
  void CountTable(const Key& key, absl::Time mono);
  // The counting read of `key` in one consistent snapshot, and the binlog
  // position that snapshot holds (nullopt when MySQL cannot tell).
  absl::StatusOr<MessageCounts::Snapshot> ReadCounts(
      const Key& key, int64_t max_groups,
      std::optional<MessageCounts::GtidPosition>* position);
  // Measures MySQL's clock for db_clock_ once a second, and when a manager
  // requests a reading, until stopping (engine_clock.cc); MeasureDbClock
  // is one measurement (and wakes the requests it answers),
  // MeasureDbClockOnce its query (false when it failed).
  void ClockLoop();
  void MeasureDbClock();
  bool MeasureDbClockOnce();
  // Reload()'s steps (engine_reload.cc): read the definitions (and the
  // paused tables) on a pooled connection; decide what changes
  // (UNAVAILABLE once stopping); build the new entries' managers; swap
  // them in, stop the replaced ones, start the new ones.
  absl::StatusOr<SchemaSnapshot> ReadSchema();
  absl::StatusOr<ReloadPlan> PlanReload(const SchemaSnapshot& snapshot);
  std::vector<std::pair<Key, Entry>> BuildEntries(
      const std::vector<TableDefinition>& changed,
      const std::set<Key>& successors);
  absl::Status SwapIn(std::vector<std::pair<Key, Entry>> fresh,
                      const std::vector<Key>& removed);
  // Reads the paused tables over `conn` (each reload); on an error the
  // known set is kept (engine_pause.cc).
  void ReadPaused(MysqlConnection& conn);
  // Pauses or resumes every loaded manager as the paused set says.
  void ApplyPaused();
  // The ownership keeper Options ask for (null for none).
  std::unique_ptr<OwnershipKeeper> NewKeeper();
  // The loaded tables by "keyspace.table" (the lease keeper's view).
  std::map<std::string, std::shared_ptr<MessageManager>> LoadedTables() const;
  std::shared_ptr<MessageManager> FindLoaded(const std::string& db,
                                             const std::string& table) const;

  // Reads every served database's groups and makes a feed for each one
  // not loaded yet (engine_groups.cc). Clears groups_pending_ on success.
  absl::Status LoadGroups() ABSL_LOCKS_EXCLUDED(groups_mu_);
  // At Start(): loads the groups and, when one's floor is behind the
  // binlog's position, sets up reading the binlog again from there
  // (replay_). Returns where the binlog watcher starts ("" = the
  // server's position). Logs what fails; the groups are then loaded at a
  // later reload, and follow the binlog from where it is then.
  std::string StartGroups();
  // The feed of `row`'s group, made if missing.
  std::shared_ptr<GroupFeed> AddFeed(const GroupRow& row)
      ABSL_LOCKS_EXCLUDED(groups_mu_);
  // Whether Start() could not read the groups (MySQL unreachable): each
  // reload tries again until it can.
  bool groups_pending() const ABSL_LOCKS_EXCLUDED(groups_mu_);
  // Where the binlog must be read from for every loaded group to resume
  // from its floor: `server` (the binlog's position now) with each domain
  // lowered to the lowest floor of the groups in it. Equal to `server`
  // when no group is behind it.
  std::string GroupsResumePosition(const std::string& server) const
      ABSL_LOCKS_EXCLUDED(groups_mu_);
  // Hands one rows event's changes to the table's groups.
  void FeedGroups(const std::string& db, const std::string& table,
                  const std::vector<RowChange>& changes)
      ABSL_LOCKS_EXCLUDED(groups_mu_);
  // Whether `changes` come from the binlog read again for the groups
  // (replay_ covers them; engine_groups.cc); ends replay_ once every
  // domain has passed it.
  bool Replayed(const std::vector<RowChange>& changes);
  void CloseGroups(absl::Status status) ABSL_LOCKS_EXCLUDED(groups_mu_);
  // Adds `waiter` (may be null) to the feed's next flush, posting one to
  // the groups worker unless one is queued already.
  void FlushGroupThen(std::shared_ptr<GroupFeed> feed,
                      std::function<void(absl::Status)> waiter);
  // On the groups worker: writes the feed's exception rows and its floor,
  // reads the payloads it asks for, answers its waiters.
  void FlushGroup(GroupFeed& feed) ABSL_LOCKS_EXCLUDED(groups_mu_);
  // groups_timer_: the feeds' ack waits and retries (GroupFeed::Tick), and
  // flushes of what they left to write, until CloseGroups.
  void GroupsTimerLoop() ABSL_LOCKS_EXCLUDED(groups_mu_);

  // BinlogWatcher::Listener:
  std::optional<BookkeepingColumns> Columns(const std::string& db,
                                            const std::string& table) override;
  void OnRowChanges(const std::string& db, const std::string& table,
                    std::vector<RowChange> changes) override;
  void OnStreaming(bool streaming, const std::string& reason) override;
  void OnTableReset(const std::string& db, const std::string& table) override;
  void OnTablesDefined(const std::vector<TableName>& tables) override;

  // Constant after construction.
  const Options options_;
  DbClock db_clock_;
  Clock* const clock_;  // &db_clock_
  JitterSource* const jitter_;

  // Serializes reloads (the reload thread and tests); held across MySQL by
  // design: it guards no request path.
  absl::Mutex reload_mu_ ABSL_ACQUIRED_BEFORE(mu_);

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;
  std::map<Key, Entry> tables_ ABSL_GUARDED_BY(mu_);
  bool loaded_once_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool binlog_streaming_ ABSL_GUARDED_BY(mu_) = false;
  // Tables the binlog saw truncated/dropped/altered: replaced at the next
  // reload, which is requested at once.
  std::set<Key> reset_requested_ ABSL_GUARDED_BY(mu_);
  bool reload_requested_ ABSL_GUARDED_BY(mu_) = false;
  // The managers a reload is stopping now (Stop waits for them too).
  std::vector<std::shared_ptr<MessageManager>> retiring_ ABSL_GUARDED_BY(mu_);
  // The paused tables as last read or written; SetPaused writes counted so
  // a read that ran across one does not undo it; the last read's error.
  std::set<Key> paused_ ABSL_GUARDED_BY(mu_);
  uint64_t pause_writes_ ABSL_GUARDED_BY(mu_) = 0;
  std::string pause_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::thread clock_thread_;
  std::thread counts_thread_;
  // Per loaded table (Options::exact_counts): its counts, when to read
  // them again (monotonic), and the reads in a row that changes raced.
  struct CountsEntry {
    std::shared_ptr<MessageCounts> counts;
    absl::Time next_read = absl::InfinitePast();
    int raced = 0;
  };
  std::map<Key, CountsEntry> counts_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<BinlogWatcher> binlog_;
  // AddCountsListener's listeners; held while they run (they may take
  // mu_).
  absl::Mutex listeners_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<uint64_t, CountsListener> counts_listeners_
      ABSL_GUARDED_BY(listeners_mu_);
  uint64_t next_listener_ ABSL_GUARDED_BY(listeners_mu_) = 1;
  // Runs every counts listener for the table.
  void NotifyCounts(const std::string& db, const std::string& table)
      ABSL_LOCKS_EXCLUDED(mu_, listeners_mu_);
  // Unless Options::sharing is kAlone: grants the tables.
  std::unique_ptr<OwnershipKeeper> keeper_;
  // Options::instance_id and address, or as Identify() set them.
  std::string instance_id_ ABSL_GUARDED_BY(mu_);
  std::string address_ ABSL_GUARDED_BY(mu_);
  // With several MySQL servers (MysqlOptions::primary).
  std::unique_ptr<MysqlPrimaryMonitor> primary_monitor_;
  // The connections of every table's rounds and of reloads; as many
  // workers run rounds as the pool has connections, so a round never waits
  // for one (except behind a reload).
  const std::shared_ptr<MysqlPool> pool_;
  const std::shared_ptr<RoundExecutor> executor_;
  // Runs SetPaused's writes, and the consumer groups' statements; last, so
  // they are joined before anything they use is destroyed.
  // Consumer groups' feeds by table and group name.
  mutable absl::Mutex groups_mu_;
  std::map<Key, std::map<std::string, std::shared_ptr<GroupFeed>>> feeds_
      ABSL_GUARDED_BY(groups_mu_);
  bool groups_pending_ ABSL_GUARDED_BY(groups_mu_) = false;
  bool groups_stopping_ ABSL_GUARDED_BY(groups_mu_) = false;
  MonotonicCondVar groups_wake_;
  std::thread groups_timer_;
  // Binlog watcher thread only (set before it starts): while the binlog
  // is read again from the groups' floors (Start), the changes the window
  // covers (up to the binlog's position at Start, per domain) go to the
  // groups alone.
  std::optional<ReplayWindow> replay_;
  SerialWorker pause_worker_;
  SerialWorker groups_worker_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_ENGINE_H_
