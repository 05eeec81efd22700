// TransactionChanges: the row changes the binlog watcher read, held until
// their transaction's commit event, so that the engine gets a transaction's
// changes of one table together and in order (a row inserted and then
// updated in one transaction is queued from its last image only, never sent
// as the first) and never the changes of a transaction it did not see end
// (a stream cut in the middle resumes at the transaction's start).
//
// Committed transactions are ready; the watcher takes what is ready when
// no further event is waiting, so that under load several transactions go
// to a table at once (one batch to a subscriber instead of one each).
//
// Bounded: once the open transaction's changes pass `max_changes` or its
// row images `max_image_bytes`, the images of that transaction are dropped
// (its rows are read back by id, which sees the committed state) and what
// is ready and held goes out at once, as do its later changes.
//
// XA transactions: the rows of a prepared group (StartXa ... Prepare) are
// in the binlog before the transaction commits, and it may roll back. They
// are held, ids only (their images go: a row is read by id once committed),
// until XA COMMIT makes them ready or XA ROLLBACK drops them; nothing of
// such a group is handed out early. An XA COMMIT whose changes are not
// held (prepared before this stream was followed, or dropped at a bound:
// a group over `max_changes`, prepared changes over `max_changes` in all,
// more than kMaxPrepared transactions prepared) answers false, and the
// caller polls for its rows.
//
// Thread-compatible: the binlog watcher's thread owns it.
#ifndef MSGQ_ENGINE_BINLOG_TRANSACTION_CHANGES_H_
#define MSGQ_ENGINE_BINLOG_TRANSACTION_CHANGES_H_

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "engine/queue/row_change.h"

namespace msgq {

class TransactionChanges {
 public:
  struct TableChanges {
    std::string db, table;
    std::vector<RowChange> changes;  // in binlog order
  };

  TransactionChanges(size_t max_changes, size_t max_image_bytes)
      : max_changes_(max_changes), max_image_bytes_(max_image_bytes) {}

  // Adds one rows event's changes to the open transaction. Returns what
  // must be handed out now: nothing while the transaction fits the bounds.
  std::vector<TableChanges> Add(const std::string& db, const std::string& table,
                                std::vector<RowChange> changes);
  // The open transaction committed: its changes are ready.
  void Commit();
  // Everything ready, one entry per table in the order the tables first
  // appeared, each table's changes in binlog order.
  std::vector<TableChanges> TakeReady();
  // The stream was cut: forgets the open transaction (not what is ready
  // or prepared).
  void Abort();

  // The open transaction is an XA transaction's prepared group.
  void StartXa();
  // XA PREPARE: the open transaction's changes wait under `xid`.
  void Prepare(const std::string& xid);
  // XA COMMIT of `xid`: its changes are ready. False when they are not
  // held: the caller must poll for them.
  bool CommitPrepared(const std::string& xid);
  // XA ROLLBACK of `xid`: its changes are dropped.
  void RollbackPrepared(const std::string& xid);

  static constexpr size_t kMaxPrepared = 1024;

  size_t held() const { return held_changes_; }
  size_t ready() const { return ready_changes_; }
  // Changes and transactions waiting for their XA COMMIT.
  size_t prepared() const { return prepared_changes_; }
  size_t prepared_transactions() const { return prepared_.size(); }

 private:
  static void Append(std::vector<TableChanges>& to, const std::string& db,
                     const std::string& table, std::vector<RowChange> changes);
  static void DropImages(std::vector<RowChange>& changes);

  struct Prepared {
    std::vector<TableChanges> tables;
    size_t changes = 0;
    bool complete = true;  // false: dropped at a bound
  };
  static size_t Count(const std::vector<TableChanges>& tables);

  const size_t max_changes_;
  const size_t max_image_bytes_;
  std::vector<TableChanges> open_;   // the open transaction's
  std::vector<TableChanges> ready_;  // committed, not taken yet
  size_t held_changes_ = 0;          // in open_
  size_t ready_changes_ = 0;         // in ready_
  size_t image_bytes_ = 0;           // of open_
  bool spilled_ = false;     // over a bound: images dropped, nothing held
  bool xa_ = false;          // open_ is an XA prepared group
  bool xa_dropped_ = false;  // ... whose changes passed max_changes_
  std::map<std::string, Prepared> prepared_;
  std::deque<std::string> prepared_order_;  // oldest first; may name gone ones
  size_t prepared_changes_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_TRANSACTION_CHANGES_H_
