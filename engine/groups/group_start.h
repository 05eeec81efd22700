// Where a new consumer group starts reading (`--from`), and MariaDB GTID
// lists, the form of a group's floor (docs/design/consumer-groups.md).
//
//   ""  or "latest"    rows committed after the creation: the floor is the
//                      binlog's GTID position when the group is created
//   "earliest"         every row still in the table: the floor is "" (no
//                      transaction at all)
//   "gtid:0-1-4711"    rows committed after that position; a GTID list,
//                      one D-S-N per replication domain ("0-1-9,1-2-3")
//   "time:..."         UNIMPLEMENTED (not built yet)
//
// A GTID list's floor is canonical: entries sorted by domain, no spaces.
//
// Example:
//   absl::StatusOr<GroupStart> from = ParseGroupStart("gtid:0-1-4711");
//   // from->kind == GroupStart::Kind::kGtid, from->gtid == "0-1-4711"
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_GROUPS_GROUP_START_H_
#define MSGQ_ENGINE_GROUPS_GROUP_START_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq {

// The widest floor msgq_groups.floor_gtid holds.
inline constexpr size_t kMaxGtidListLength = 1024;

// A MariaDB GTID list: per domain, the server id and sequence number.
struct GtidEntry {
  uint32_t server = 0;
  uint64_t sequence = 0;
  friend bool operator==(const GtidEntry&, const GtidEntry&) = default;
};
using GtidList = std::map<uint32_t, GtidEntry>;

// Parses "D-S-N[,D-S-N...]" (spaces around entries allowed; "" is the
// empty list). INVALID_ARGUMENT naming the bad entry: not three unsigned
// numbers, a domain or server id above 4294967295, a sequence above
// 18446744073709551615, a domain twice.
absl::StatusOr<GtidList> ParseGtidList(absl::string_view text);
// "D-S-N,..." by domain; "" for the empty list.
std::string FormatGtidList(const GtidList& list);

// INVALID_ARGUMENT when `floor` names a transaction the server's binlog
// has not reached (`server`, its @@gtid_binlog_pos): a domain the server
// has not seen, or a sequence past the server's in that domain; the
// message names both lists.
absl::Status CheckGtidReached(const GtidList& floor, const GtidList& server);

// The binlog read a second time at start, for groups whose floors are
// behind the server's position `until` (@@gtid_binlog_pos when the read
// began): which transactions are read again, each domain on its own.
// Sequences grow within a domain, so a transaction is read again exactly
// when its domain is in `until` at a sequence at or above it; a domain
// `until` lacks began after the start, so all of it is new. Not
// thread-safe: one reader, the binlog watcher's thread.
class ReplayWindow {
 public:
  explicit ReplayWindow(GtidList until) : ahead_(std::move(until)) {}
  // Whether the transaction (domain, sequence) was read before. Forgets a
  // domain at its first transaction past `until`.
  bool Covers(uint32_t domain, uint64_t sequence);
  // Every domain of `until` has passed it: nothing more is read again.
  bool done() const { return ahead_.empty(); }

 private:
  GtidList ahead_;  // the domains of `until` not yet passed
};

struct GroupStart {
  enum class Kind { kLatest, kEarliest, kGtid };
  Kind kind = Kind::kLatest;
  std::string gtid;  // kGtid: the canonical list
};

// Parses a --from value as above. INVALID_ARGUMENT for any other form (the
// message lists the forms) or a malformed GTID list (longer than 1024
// characters included); UNIMPLEMENTED for "time:".
absl::StatusOr<GroupStart> ParseGroupStart(absl::string_view from);

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_GROUP_START_H_
