// TransactionChanges: the row changes of the binlog transaction being read,
// held until its commit event, so that the engine gets a transaction's
// changes of one table together and in order (a row inserted and then
// updated in one transaction is queued from its last image only, never sent
// as the first) and never the changes of a transaction it did not see end
// (a stream cut in the middle resumes at the transaction's start).
//
// Bounded: once a transaction's held changes pass `max_changes` or their
// row images `max_image_bytes`, the images of that transaction are dropped
// (its rows are read back by id, which sees the committed state) and the
// changes are handed out at once, as are its later ones.
//
// Thread-compatible: the binlog watcher's thread owns it.
#ifndef MSGQ_ENGINE_BINLOG_TRANSACTION_CHANGES_H_
#define MSGQ_ENGINE_BINLOG_TRANSACTION_CHANGES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "engine/binlog/row_change.h"

namespace msgq {

class TransactionChanges {
 public:
  struct TableChanges {
    std::string db, table;
    std::vector<RowChange> changes;  // in binlog order
  };

  TransactionChanges(size_t max_changes, size_t max_image_bytes)
      : max_changes_(max_changes), max_image_bytes_(max_image_bytes) {}

  // Adds one rows event's changes. Returns what must be handed out now:
  // nothing while the transaction fits the bounds.
  std::vector<TableChanges> Add(const std::string& db, const std::string& table,
                                std::vector<RowChange> changes);
  // The transaction ended (committed): everything held, one entry per
  // table in the order the tables first appeared.
  std::vector<TableChanges> Commit();
  // The stream was cut: forgets what is held.
  void Clear();

  size_t held() const { return held_changes_; }

 private:
  static void DropImages(std::vector<RowChange>& changes);

  const size_t max_changes_;
  const size_t max_image_bytes_;
  std::vector<TableChanges> tables_;
  size_t held_changes_ = 0;
  size_t image_bytes_ = 0;
  bool spilled_ = false;  // over a bound: images dropped, nothing held
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_TRANSACTION_CHANGES_H_
