// BinlogPosition: a place in one server's binary log, as a file and a byte
// offset in it, and the one comparison the race rules need: whether a
// change at one place is already in a read taken at another.
//
// A read run inside `START TRANSACTION WITH CONSISTENT SNAPSHOT` knows the
// place its snapshot reflects (MariaDB's Binlog_snapshot_file and
// Binlog_snapshot_position: the end of the last transaction it includes);
// the binlog watcher knows where each change's rows event ends. On one
// server the binlog is in commit order, so a change whose event ends at or
// before a read's place is in that read, and one after it is not
// (docs/design/position-fence.md).
//
// Files are compared by the number after their last '.' ("binlog.000012");
// places in files of different base names (another server, a renamed
// log) are not comparable.
//
// Example:
//   BinlogPosition read{"binlog.000003", 1200};
//   BinlogPosition change{"binlog.000003", 980};
//   IncludedIn(change, read);  // true: the read shows the change
//
// A value type; thread-compatible.
#ifndef MSGQ_ENGINE_QUEUE_BINLOG_POSITION_H_
#define MSGQ_ENGINE_QUEUE_BINLOG_POSITION_H_

#include <cstdint>
#include <optional>
#include <string>

namespace msgq {

struct BinlogPosition {
  std::string file;     // "" when unknown
  uint64_t offset = 0;  // bytes from the file's start

  bool known() const { return !file.empty(); }
  bool operator==(const BinlogPosition& o) const {
    return file == o.file && offset == o.offset;
  }
};

// Whether the change whose event ends at `change` is in a read whose
// snapshot is at `read`: nullopt when either is unknown or their files are
// not comparable.
std::optional<bool> IncludedIn(const BinlogPosition& change,
                               const BinlogPosition& read);

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_BINLOG_POSITION_H_
