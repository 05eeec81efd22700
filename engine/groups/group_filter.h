// GroupFilter: which rows of a table a consumer group receives
// (`--filter`, docs/design/consumer-groups.md#filters), parsed by msgqd
// and validated against the table's columns, never passed to MySQL as
// text.
//
// Grammar (keywords in any case):
//   filter    := condition { AND condition }      ("" or blanks: no filter)
//   condition := column = value | column IN ( value { , value } )
//   column    := name | `quoted name`             (`` is a backtick)
//   value     := 'string' | integer | decimal     (-12, 3.50)
// Strings take MySQL's escapes (\0 \' \" \b \n \r \t \Z \\, \% and \_ keep
// their backslash, any other \x is x) and '' for a quote.
//
// Validation, against the table's columns (names compared without regard
// to case):
//   - a column is one of the application's: not msgq's bookkeeping (epoch,
//     time_next, time_acked, time_created, time_dead, last_error), of an
//     integer (not ZEROFILL), DECIMAL, CHAR/VARCHAR/TEXT, ENUM or
//     BINARY/VARBINARY/BLOB type; each column at most once;
//   - integer columns take integers in the type's range, DECIMAL(M,D)
//     numbers with at most M-D digits before the point and D after,
//     string columns quoted strings (CHAR/VARCHAR(N) at most N characters,
//     BINARY/VARBINARY(N) N bytes), ENUM columns one of their values.
// The filter is at most 4096 bytes.
//
// Errors are INVALID_ARGUMENT, starting "filter: ", saying what is wrong
// and where (a position counts bytes from 1), e.g.
//   filter: unknown column "typ"; columns: id, priority, type, region
//   filter: expected = or IN after "type" at position 6, found LIKE
//   filter: column "priority" is tinyint: 300 is out of range (-128 to 127)
//
// ToString() is the canonical text: conditions in the order given, names
// as the table spells them (backquoted when not a plain word), one value
// as `=`, several as IN (duplicates dropped), numbers in canonical form
// (DECIMAL with its D decimals), strings single-quoted with \\ \' \0 \n
// \r \t escaped. Parsing it again gives the same filter.
//
// Example:
//   absl::StatusOr<GroupFilter> f = ParseGroupFilter(
//       "type in ('a','b') and region='eu'", table.columns);
//   f->ToString();  // "type IN ('a', 'b') AND region = 'eu'"
//
// Thread-safe (pure functions; a GroupFilter is a value).
#ifndef MSGQ_ENGINE_GROUPS_GROUP_FILTER_H_
#define MSGQ_ENGINE_GROUPS_GROUP_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/message_table.h"

namespace msgq {

inline constexpr size_t kMaxFilterLength = 4096;

struct FilterCondition {
  std::string column;  // as the table spells it
  // Each value's canonical text (the row's text form it matches), distinct,
  // in the order given.
  std::vector<std::string> values;
  bool quoted = false;  // a string column: values print quoted
  friend bool operator==(const FilterCondition&,
                         const FilterCondition&) = default;
};

struct GroupFilter {
  std::vector<FilterCondition> conditions;  // all must hold; none: every row
  std::string ToString() const;
  friend bool operator==(const GroupFilter&, const GroupFilter&) = default;
};

absl::StatusOr<GroupFilter> ParseGroupFilter(
    absl::string_view text, const std::vector<Column>& columns);

// A filter bound to the columns a table streams (MessageTable::streamed),
// to test rows packed in that order: each column's text form as MySQL
// sends it, one length per column (-1 for NULL) and the values end to end
// (engine/queue/message.h's PackedRow). A row passes when every condition
// holds: its column is not NULL and its text equals one of the condition's
// values byte for byte (so 'EU' does not match 'eu' whatever the column's
// collation, and BINARY(N) values must be given padded to N bytes).
// Thread-safe (a value).
class RowFilter {
 public:
  // INVALID_ARGUMENT naming the column when a condition's column is not
  // among `streamed`.
  static absl::StatusOr<RowFilter> Bind(const GroupFilter& filter,
                                        const std::vector<Column>& streamed);
  // Whether the row passes; false for a row with fewer columns than bound.
  bool Matches(const std::vector<int64_t>& lengths,
               absl::string_view values) const;

 private:
  struct Bound {
    size_t index = 0;  // in the streamed columns
    std::vector<std::string> values;
  };
  std::vector<Bound> conditions_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_GROUP_FILTER_H_
