// LastChanges: rule 3 of row_reconciler.h. Per id, where the last change
// the binlog showed of it ends (E), kept while a read may be older than
// it, so that a read whose snapshot is at R < E drops that row: the read
// shows the row from before the change, which was acted on already.
//
// The binlog runs ahead of the snapshots: a read that starts after the
// watcher showed E may still be at R < E (MariaDB's snapshot position
// moves at the engine commit, after the binlog write). So E is kept while
// a read runs, and while E is after the largest R of the reads that ended
// (the floor): every read that starts later is at or after the floor.
// Where E and R do not compare (either unknown, another log's base name),
// a read drops a row whose last change was shown while it ran, and after
// a read without a position only changes shown during a read are kept
// (docs/design/position-fence.md says what that misses).
//
// Reads and changes are numbered by the caller, in the order they came.
//
// Example:
//   LastChanges last;
//   last.Shown("a", {"binlog.000001", 100}, /*number=*/0, /*reading=*/false);
//   last.Stale("a", /*read=*/1, {"binlog.000001", 60});   // true
//   last.Stale("a", /*read=*/1, {"binlog.000001", 100});  // false
//
// Bounds: at most `capacity` ids. Past it all are forgotten and the last
// change forgotten is kept as a mark: a read that ran then, or whose R is
// before the mark, is stale in every row (a later poll reads them).
// Nothing is kept for a time.
//
// Not thread-safe: the owning RowReconciler is guarded by its manager.
#ifndef MSGQ_ENGINE_QUEUE_LAST_CHANGES_H_
#define MSGQ_ENGINE_QUEUE_LAST_CHANGES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "engine/queue/binlog_position.h"

namespace msgq {

class LastChanges {
 public:
  explicit LastChanges(size_t capacity = size_t{1} << 16)
      : capacity_(capacity) {}

  // The binlog showed a change of `id` ending at `at`, numbered `number`;
  // `reading`: a read runs.
  void Shown(absl::string_view id, const BinlogPosition& at, uint64_t number,
             bool reading);
  // Whether read `read` (its number), at `at`, may show `id` older than
  // its last change shown.
  bool Stale(absl::string_view id, uint64_t read,
             const BinlogPosition& at) const;
  // A read ended at `at`; `returned`: it did not fail; `last`: no read
  // runs any more (then what every later read includes is forgotten).
  void ReadEnded(const BinlogPosition& at, bool returned, bool last);

  size_t size() const { return last_.size(); }

 private:
  struct Change {
    BinlogPosition at;
    uint64_t number = 0;
  };
  // Whether a change at `at` may be newer than a read that starts later.
  bool AfterFloor(const BinlogPosition& at) const {
    return at.known() && !reads_lack_positions_ &&
           IncludedIn(at, floor_) != true;
  }

  const size_t capacity_;
  absl::flat_hash_map<std::string, Change> last_;
  // The largest R of the reads that ended with one, and whether the last
  // read that ended had none.
  BinlogPosition floor_;
  bool reads_lack_positions_ = false;
  // The last change forgotten for room, while a read may be older.
  std::optional<Change> forgotten_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_LAST_CHANGES_H_
