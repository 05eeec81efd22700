// The key column of msgq_concurrency_by, checked against a built table.
//
// msgq_concurrency_by's column must exist, be none of msgq's own, and be an
// integer, char, varchar, binary or varbinary column (one an index holds
// whole, and whose values are written into SQL as literals of its kind).
// BuildMessageTable (message_table.cc) calls it at load, with the checks of
// the other directives' columns, so a table it refuses never loads. The
// store calls it again when it is built, for the key's kind, and refuses to
// poll (FAILED_PRECONDITION) a table it does not accept (one built by hand).
//
// Thread-safe (a pure function).
#ifndef MSGQ_ENGINE_CONCURRENCY_COLUMN_H_
#define MSGQ_ENGINE_CONCURRENCY_COLUMN_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/message_table.h"

namespace msgq {

struct ConcurrencyKey {
  std::string column;           // as the table spells it
  IdKind kind = IdKind::kText;  // how its values are written into SQL
};

// The key of `table`'s msgq_concurrency_by (settings.concurrency_by must
// be set). FAILED_PRECONDITION, "table `db`.`t`: <cause>", when the column
// is missing, one of msgq's own, or of another type.
absl::StatusOr<ConcurrencyKey> ResolveConcurrencyKey(const MessageTable& table);

}  // namespace msgq

#endif  // MSGQ_ENGINE_CONCURRENCY_COLUMN_H_
