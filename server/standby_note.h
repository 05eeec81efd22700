// StandbyNote: what a subscriber of a msgqd that does not send a table is
// told when its stream opens.
//
// With leases (docs/several-instances.md) one msgqd sends each table; the
// others stand by and keep their subscribers connected and idle, so that a
// takeover needs no reconnect. Such a subscriber is served, but told which
// instance sends the table, so that one connected to a standby alone does
// not wait without a word. The gRPC stream carries the note in its initial
// metadata (StreamReactor::kStandbyMetadata); `msgq tail` prints it.
//
// Example:
//   std::optional<std::string> note =
//       StandbyNote(table, engine.Ownership(*manager), engine.instance_id());
//   // "this msgqd (b:2) stands by for `msgq`.`jobs`: instance a:1 sends it;
//   //  this stream receives its messages only once this msgqd takes the
//   //  table over (subscribe to every instance: msgq --server=A,B)"
//
// Thread-safe (a pure function).
#ifndef MSGQ_SERVER_STANDBY_NOTE_H_
#define MSGQ_SERVER_STANDBY_NOTE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "engine/lease/table_ownership.h"
#include "engine/message_table.h"

namespace msgq {

// The note, in printable ASCII (other bytes of names \x-escaped); nullopt
// when this msgqd sends the table (its owner, or leases off).
std::optional<std::string> StandbyNote(const MessageTable& table,
                                       const TableOwnership& ownership,
                                       absl::string_view self);

}  // namespace msgq

#endif  // MSGQ_SERVER_STANDBY_NOTE_H_
