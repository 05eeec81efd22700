// MysqlMessageStore: MessageStore over one MySQL connection of its own.
//
// The connection is opened lazily and replaced after it breaks, so a store
// survives MySQL restarts: calls return UNAVAILABLE while MySQL is away and
// work again once it is back. Not thread-safe (one manager thread uses it).
//
// Due is MySQL's judgement: every read of due rows (polls, fetches by id,
// the next-due query, the rows in flight) compares time_next with MySQL's
// clock in the statement itself (kMysqlNowNs, sql_literal.h); the `now`
// those calls take is not used (docs/design/due-clock.md).
//
// Isolation: the connection runs READ COMMITTED (mysql_connection.h). A
// row a read misses (committed just after) is named by the binlog or read
// by the next poll. When the server writes a binary log, a poll or fetch
// runs in a REPEATABLE READ transaction started WITH CONSISTENT SNAPSHOT
// and reads where in the binlog that snapshot is (Binlog_snapshot_file and
// _position), so its rows come with their position (read_position(),
// comparable with the binlog's changes: docs/design/position-fence.md).
// That costs the read four statements more (SET TRANSACTION, START
// TRANSACTION, SHOW STATUS, COMMIT). A server that does not say where a
// snapshot is (MySQL) is read without, from the first such answer on.
// Postpones and acks are `UPDATE ... WHERE id IN (...) AND time_acked IS
// NULL AND time_next IS NOT NULL` (nacks and extends also name the epoch,
// redrives match time_next IS NULL instead; failure_statements.h): InnoDB
// re-evaluates the WHERE on the latest committed row version under a record
// lock, so "only rows still unacked and not dead" holds at any level, and
// READ COMMITTED takes no gap locks for ids that do not exist (REPEATABLE
// READ did, blocking producers' INSERTs into those gaps). A purge deletes
// acked (or, PurgeDead, dead) rows only, and on a table with
// msgq_dedup_window not those whose dedup_key is still in its window
// (KeepDedupKeys, failure_statements.h); which of them one statement picks
// does not matter. The first Write that stores a nack's reason reads the
// last_error column's character set from information_schema (once per
// store), so that reasons are cut to characters the column can hold.
//
// Rows locked by another transaction (docs/design/locked-rows.md): the
// session waits at most kLockWaitSeconds for a row lock. When a write
// times out on one, Write finds the locked rows of its batch (those a
// consistent read sees that a locking read with SKIP LOCKED passes over)
// and writes the rest without them, reporting them in WriteResult::locked;
// while a batch expects locked rows, or the last one had some, it looks
// first and does not wait for them. A server without SKIP LOCKED (MariaDB
// before 10.6, MySQL before 8.0.1) refuses the locking read once: from
// then on a locked row fails the whole Write with ABORTED after the wait,
// as without this.
#ifndef MSGQ_ENGINE_SQL_MYSQL_MESSAGE_STORE_H_
#define MSGQ_ENGINE_SQL_MYSQL_MESSAGE_STORE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "engine/concurrency_column.h"
#include "engine/directives.h"
#include "engine/message_table.h"
#include "engine/queue/message_store.h"
#include "engine/sql/failure_statements.h"
#include "engine/sql/fair_poll.h"
#include "engine/sql/mysql_connection.h"
#include "engine/sql/mysql_pool.h"
#include "engine/sql/partition_maintenance.h"

namespace msgq {

// The longest statement a session with this max_allowed_packet may send:
// the packet less a margin, capped at 4 MiB.
size_t StatementLimit(int64_t max_allowed_packet);

// How much of the table one read (a poll or a fetch) brings into memory.
struct ReadLimits {
  // A row whose large columns (BLOB, TEXT and JSON types) hold more than
  // this many bytes in all is read without them: MySQL sends NULL for
  // each, and Message::unread_bytes says how large the row is. Its payload
  // never reaches msgqd (MessageManager lets such a row die).
  size_t max_row_bytes = SIZE_MAX;
  // A read keeps rows, in order, until their Message::WireBytes reach this
  // (the row that reaches it is kept) and reads no further; its connection
  // is then replaced (MysqlConnection::ForEachRow). A caller knows a read
  // was cut when its rows' bytes reach the bound.
  size_t max_read_bytes = SIZE_MAX;
};

class MysqlMessageStore final : public MessageStore {
 public:
  // With a `pool` (not owned; it must outlive the store), statements borrow
  // one of its connections for the rest of the round (EndRound gives it
  // back); a connection not free within kBorrowTimeout is UNAVAILABLE
  // (retry later). Without one, the store keeps a connection of its own.
  MysqlMessageStore(MessageTable table, MysqlOptions options,
                    MysqlPool* pool = nullptr, ReadLimits limits = {});

  static constexpr absl::Duration kBorrowTimeout = absl::Seconds(5);
  // The session's innodb_lock_wait_timeout: the longest one statement
  // waits for a row another transaction holds locked (the server's default
  // is 50 s). Long enough for a producer's INSERT to finish committing
  // (postpones and acks of a row sent from its binlog image wait for it),
  // short enough that a row an application keeps locked delays the
  // table's other writes by at most this, once per lock met.
  static constexpr int kLockWaitSeconds = 1;

  void EndRound() override { lease_.reset(); }

  // Rows read by one poll at most, whatever the caller asks: the poll's
  // LIMIT is clamped to [0, kMaxPollRows] so it can neither overflow nor
  // read more than twice the largest cache (directives.h) into memory.
  static constexpr int64_t kMaxPollRows = 2 * int64_t{kMaxCacheSize};

  absl::StatusOr<std::vector<Message>> PollDue(int64_t now,
                                               int64_t limit) override;
  // Plain tables only (no msgq_fair_by, no msgq_order_by): their poll
  // reads poller_idx (time_acked, priority, time_next) and the id behind it.
  bool polls_ids() const override {
    return !fair_sql_.has_value() && head_condition_.empty();
  }
  absl::StatusOr<std::vector<std::string>> PollDueIds(int64_t now,
                                                      int64_t limit) override;
  absl::StatusOr<std::vector<Message>> FetchDue(
      const std::vector<std::string>& ids, int64_t now) override;
  absl::StatusOr<std::optional<int64_t>> NextDueAfter(int64_t now) override;
  // The rows among `ids` whatever their state (acked, dead, due or not),
  // packed as a poll packs them: the payloads a consumer group sends again
  // (docs/design/consumer-groups.md#slice-3-exceptions). Ids the column
  // cannot hold are skipped; rows that are gone are missing from the
  // answer. Not in a snapshot (read_position() is unknown after it).
  absl::StatusOr<std::vector<Message>> ReadByIds(
      const std::vector<std::string>& ids);
  BinlogPosition read_position() const override { return read_position_; }
  // msgq_concurrency_by (mysql_message_store_due.cc). Both return
  // FAILED_PRECONDITION when ResolveConcurrencyKey refused the column, and
  // PollDueByKey when the table has no index starting (time_acked, key)
  // (looked up in information_schema at the first poll, again after a
  // failed one). PollDue of such a table is FAILED_PRECONDITION.
  absl::StatusOr<std::vector<Message>> PollDueByKey(
      int64_t now, int64_t limit, const KeyRoom& room) override;
  absl::StatusOr<std::vector<InFlightRow>> ReadInFlight(int64_t now) override;
  absl::StatusOr<WriteResult> Write(const WriteBatch& batch) override;
  absl::StatusOr<int64_t> Purge(int64_t cutoff, int limit) override;
  absl::StatusOr<int64_t> PurgeDead(int64_t cutoff, int limit) override;
  absl::StatusOr<int64_t> CountDead() override;
  // Tables with purge_by_partition; FAILED_PRECONDITION for others.
  absl::StatusOr<PartitionReport> MaintainPartitions(int64_t now) override;
  const PartitionStatements& partition_sql() const { return partition_sql_; }
  // Reads at most kMaxPollRows rows whatever `limit` asks (negative = 0).
  absl::StatusOr<std::vector<DeadRow>> ListDead(const std::string& after_id,
                                                int limit) override;

  // Keys a fair poll reads per page at most (msgq_fair_by), pages per poll
  // at most, and the passes over one page's keys (each pass gives the room
  // left to the keys that filled their share).
  static constexpr int64_t kFairKeysPerPage = 1000;
  static constexpr int kFairPagesPerPoll = 4;
  static constexpr int kFairPassesPerPage = 4;

  // The SQL of a poll (of an unfair table) and of CountDead (for EXPLAIN
  // in tests; NextDueAfter's are in next_due_statements.h).
  // `now` as NowOperand (sql_literal.h): the store's reads pass nullopt,
  // MySQL's clock.
  std::string PollSql(std::optional<int64_t> now, int64_t limit) const;
  std::string PollIdsSql(std::optional<int64_t> now, int64_t limit) const;
  std::string CountDeadSql() const { return failure_sql_.CountDead(); }

  // Row ids refused so far because they are not valid for the id column
  // (e.g. text read back after ALTER TABLE changed the column).
  int64_t skipped_ids() const { return skipped_ids_; }

 private:
  using IdSet = absl::flat_hash_set<std::string>;
  absl::StatusOr<MysqlConnection*> Conn();
  // Runs a SELECT of select_prefix_ columns and decodes the rows, keeping
  // them while *bytes_left (their WireBytes, taken from it) lasts: the row
  // that uses it up is kept, and the read ends there (ForEachRow).
  absl::StatusOr<std::vector<Message>> ReadMessages(const std::string& sql,
                                                    int64_t expected,
                                                    size_t* bytes_left);
  // PollDue of a msgq_fair_by table (mysql_message_store_fair.cc): keys a
  // page at a time, then each key's share of `limit`, interleaved by rank
  // within the key (1st of every key, then 2nd, ...). With a `room`
  // (msgq_concurrency_by), at most room->For(key) rows of each key.
  absl::StatusOr<std::vector<Message>> FairPollDue(int64_t limit,
                                                   const KeyRoom* room);
  // The priorities of unacked rows (a skip scan), or none when there are
  // more than kNextDueMaxPriorities.
  absl::StatusOr<std::vector<int64_t>> UnackedPriorities(MysqlConnection* conn);
  // Sets fair_index_ (mysql_message_store_fair.cc).
  absl::Status LearnFairIndex(MysqlConnection* conn);
  // Starts a read: with a binary log, opens its consistent snapshot and
  // sets read_position_ to where it is; otherwise (or when the server does
  // not say) nothing but clearing read_position_. UNAVAILABLE or another
  // error of the statements; then no transaction is open.
  absl::Status BeginSnapshotRead();
  // Ends the read BeginSnapshotRead started: commits its snapshot. The
  // position is kept only when `read` is OK and ran on the snapshot's
  // connection throughout. Returns `read`, or the COMMIT's error.
  template <typename T>
  absl::StatusOr<T> EndSnapshotRead(absl::StatusOr<T> read);
  // The connection statements run on now, null when none is open.
  MysqlConnection* CurrentConn();
  // Drops the connection when `status` says it broke; returns `status`.
  absl::Status Check(absl::Status status);
  // Statements `prefix <literals of ids, comma-separated> suffix`, each at
  // most `limit` bytes, covering every id (none when `ids` is empty). An id
  // the column cannot hold, or whose literal alone does not fit, is an
  // INVALID_ARGUMENT error, or, with `skip_bad_ids`, skipped, counted and
  // logged (never written into SQL). INVALID_ARGUMENT, whatever
  // `skip_bad_ids`, when prefix and suffix alone do not fit.
  absl::StatusOr<std::vector<std::string>> InListStatements(
      absl::string_view prefix, absl::string_view suffix,
      const std::vector<std::string>& ids, bool skip_bad_ids, size_t limit);

  // A unit of failure of Write: the postpones, or one group of a kind;
  // kAcks stands for several kAck units (its members) written as one.
  enum class UnitKind { kPostpones, kAck, kNack, kExtend, kRedrive, kAcks };
  struct Statement {
    std::string sql;
    bool counts_dead = false;  // its rows count as NackCount::dead
  };
  struct WriteUnit {
    UnitKind kind = UnitKind::kPostpones;
    size_t group = 0;  // index among the batch's groups of `kind`
    std::vector<Statement> statements;
    int64_t affected = 0;  // rows changed by statements not counting dead
    int64_t dead = 0;      // rows changed by statements counting dead
    // kAck: the ids of the group not named by an earlier kAck unit of the
    // batch (its count when the merged statements hit every one).
    int64_t distinct = 0;
    // kAcks: the kAck units it stands for (it must change their
    // `distinct`, summed); set once its statements missed a row, after
    // which the members run on their own.
    std::vector<size_t> members;
    bool fell_back = false;
  };
  static constexpr size_t kNoUnit = static_cast<size_t>(-1);
  // Ids per statement of a kAcks unit (a row update cost the same in
  // statements of 250 to 2,000 ids: docs/benchmarks.md#acks-of-many-requests).
  static constexpr size_t kMergedAckIds = 1000;
  // Appends to `unit` the statements of `in` over `ids` (InListStatements,
  // ids validated, never skipped).
  absl::Status AppendInList(const InList& in,
                            const std::vector<std::string>& ids, size_t limit,
                            WriteUnit& unit);
  // The ack UPDATE of ids, acked at `now`.
  InList AckInList(int64_t now) const;
  // The units of `batch`, in transaction order, without the ids in
  // `locked`: postpones and acks of them are left out, a nack, extend or
  // redrive group naming one gets ABORTED in *result and no unit, and with
  // `all_locked_out` so does a redrive of all dead rows (it names none the
  // caller could look for). A group that cannot be written (a malformed
  // id) gets its error in *result and no unit, a group with nothing to
  // write gets its zero count and no unit.
  std::vector<WriteUnit> BuildUnits(const WriteBatch& batch, size_t limit,
                                    const IdSet& locked, bool all_locked_out,
                                    WriteResult* result);
  // With two or more kAck units from units[first] on: appends the kAcks
  // unit that writes their ids (`acks`, each group's ids to write, acked
  // at `now`) each once, in statements of at most kMergedAckIds ids, after
  // a SAVEPOINT. The acks of many MessageAck RPCs then share statements (a
  // client acking message by message would otherwise cost MySQL a
  // statement per message).
  void MergeAcks(const std::vector<std::vector<std::string>>& acks, int64_t now,
                 size_t first, size_t limit, std::vector<WriteUnit>& units);
  // Write without the ids in `locked` (BuildUnits): every unit in one
  // transaction, a unit that fails permanently left out and the others run
  // again.
  absl::StatusOr<WriteResult> WriteUnits(const WriteBatch& batch,
                                         const IdSet& locked,
                                         bool all_locked_out, size_t limit);
  // Which rows `batch` names go into FindLocked's answer.
  enum class LockedScope {
    // Rows a consistent read sees that a locking read could not lock. A
    // row whose INSERT is still committing is not visible yet: it is
    // written as usual, and the write waits for the commit.
    kVisible,
    // Every row a locking read could not lock (or did not find).
    kUnlocked,
  };
  // The ids of `batch` (each once) whose rows another transaction holds
  // locked now: for kVisible a consistent read of the ids, then `SELECT id
  // ... FOR UPDATE SKIP LOCKED` (its locks end with the statement:
  // autocommit). Errors: UNAVAILABLE, ABORTED; another (the server has no
  // SKIP LOCKED) is permanent.
  absl::StatusOr<IdSet> FindLocked(MysqlConnection* conn,
                                   const WriteBatch& batch, LockedScope scope,
                                   size_t limit);
  // The ids the rows of `statements` (SELECT `id` ...) return.
  absl::StatusOr<IdSet> ReadIds(MysqlConnection* conn,
                                const std::vector<std::string>& statements);
  // Runs unit.statements, counting their rows into unit.affected and
  // unit.dead (reset first).
  absl::Status RunUnit(MysqlConnection* conn, WriteUnit& unit);
  // Runs the kAcks unit units[u] inside the open transaction. When its
  // statements change fewer rows than it expected (an id acked already,
  // dead, unknown), it rolls back to its SAVEPOINT and runs its members
  // one by one, so every RPC gets the exact count it would alone. On error
  // *failed names units[u] or the member that failed.
  absl::Status RunMergedAcks(MysqlConnection* conn,
                             std::vector<WriteUnit>& units, size_t u,
                             size_t* failed);
  // Reads the character set of the last_error column once (reasons are
  // cut to what it can hold), when `batch` stores a reason. Errors are
  // UNAVAILABLE or ABORTED only; another failure is logged and the reasons
  // of this call are cut to ASCII.
  absl::Status LearnLastErrorCharset(MysqlConnection* conn,
                                     const WriteBatch& batch);
  // Runs the statements of units[live...] in one transaction (none for a
  // single statement without a kAcks unit; the session has autocommit on). On
  // error everything was rolled back and *failed names the unit whose statement
  // failed (kNoUnit when BEGIN or COMMIT failed).
  absl::Status RunTransaction(MysqlConnection* conn,
                              std::vector<WriteUnit>& units,
                              const std::vector<size_t>& live, size_t* failed);

  const MessageTable table_;
  const MysqlOptions options_;
  const ReadLimits limits_;
  const std::string quoted_table_;  // `db`.`t`
  const std::string log_name_;      // table `db`.`t`
  // What the postpones and acks UPDATE (mysql_message_store_units.cc):
  // `db`.`t` FORCE INDEX (PRIMARY) when the primary key is the id alone,
  // else `db`.`t` [FORCE INDEX (PRIMARY)] JOIN (SELECT 1) AS `msgq_settle`.
  const std::string settle_target_;
  // What FindLocked reads: `db`.`t` [FORCE INDEX (PRIMARY)].
  const std::string lock_target_;
  // SELECT priority, time_next, epoch[, time_created], <streamed> FROM t
  std::string select_prefix_;
  // With msgq_order_by: the condition that a row is its key's head (every
  // read of due rows ANDs it in); empty otherwise.
  std::string head_condition_;
  size_t first_streamed_ = 3;  // index of the id in select_prefix_'s rows
  // With large streamed columns and a ReadLimits::max_row_bytes: the index
  // of the column holding their bytes in all (0 otherwise).
  size_t size_column_ = 0;
  // With msgq_fair_by: the fair column's index in select_prefix_'s rows
  // (0 otherwise), the fair poll's SQL, and where the next poll's key page
  // starts (nullopt: at the first key).
  size_t fair_column_ = 0;
  // The fair or concurrency key column as the table spells it ("" if
  // none), and why msgq_concurrency_by's column was refused (OK if not).
  std::string key_column_;
  absl::Status concurrency_error_;
  std::optional<FairPollSql> fair_sql_;
  std::optional<std::string> fair_after_;
  // The index that starts (time_acked, fair column), looked up in
  // information_schema at the first fair poll and after a failed one;
  // empty when the table has none (the poll then goes without).
  bool fair_index_known_ = false;
  std::string fair_index_;
  FailureStatements failure_sql_;
  PartitionStatements partition_sql_;
  bool last_error_charset_known_ = false;
  // The last Write found rows locked by another transaction: the next one
  // looks for them first.
  bool look_for_locks_ = false;
  // The server refused SELECT ... FOR UPDATE SKIP LOCKED (logged once).
  bool skip_locked_refused_ = false;
  MysqlPool* const pool_;                  // may be null
  std::optional<MysqlPool::Lease> lease_;  // with a pool
  std::unique_ptr<MysqlConnection> conn_;  // without one
  int64_t skipped_ids_ = 0;
  // Reads run in consistent snapshots while the server says where they
  // are; false from the first answer without a position on.
  bool snapshot_reads_ = true;
  // The snapshot of the read running, on this connection (null: none).
  MysqlConnection* snapshot_conn_ = nullptr;
  // Counts the connections opened or borrowed, so that a read knows that
  // its connection was replaced meanwhile.
  uint64_t conn_generation_ = 0;
  uint64_t snapshot_generation_ = 0;
  BinlogPosition read_position_;
};

template <typename T>
absl::StatusOr<T> MysqlMessageStore::EndSnapshotRead(absl::StatusOr<T> read) {
  MysqlConnection* const conn = snapshot_conn_;
  snapshot_conn_ = nullptr;
  if (conn == nullptr) return read;
  const bool same = snapshot_generation_ == conn_generation_ &&
                    CurrentConn() == conn && !conn->broken();
  if (!read.ok() || !same) read_position_ = {};
  if (!same) return read;  // the transaction went with its connection
  absl::StatusOr<uint64_t> ended = conn->Execute("COMMIT");
  if (!ended.ok()) {
    read_position_ = {};
    absl::Status s = Check(ended.status());
    return read.ok() ? absl::StatusOr<T>(s) : read;
  }
  return read;
}

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_MESSAGE_STORE_H_
