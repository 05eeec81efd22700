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
// log) are not comparable. Nor are places on two different servers, when
// both name theirs (`server`: "server_id@hostname:port", as
// ServerIdentitySql reads it): after a failover the new server's binlog
// may have the same base name and numbers that mean nothing against the
// old one's, so its places compare with none of the old server's until
// reads on the new server give new ones (a new owner's start).
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

// The statement that names the server a connection reaches, in the form
// BinlogPosition::server takes: one row, one column.
inline constexpr char kServerIdentitySql[] =
    "SELECT CONCAT(@@server_id, '@', @@hostname, ':', @@port)";

struct BinlogPosition {
  std::string file;     // "" when unknown
  uint64_t offset = 0;  // bytes from the file's start
  std::string server;   // whose binlog: "" when not named

  bool known() const { return !file.empty(); }
  bool operator==(const BinlogPosition& o) const {
    return file == o.file && offset == o.offset && server == o.server;
  }
};

// Whether the change whose event ends at `change` is in a read whose
// snapshot is at `read`: nullopt when either is unknown, when both name
// their servers and the servers differ, or when their files are not
// comparable.
std::optional<bool> IncludedIn(const BinlogPosition& change,
                               const BinlogPosition& read);

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_BINLOG_POSITION_H_
