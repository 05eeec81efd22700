// Row-image text: turns a column value of a binlog row image into the exact
// text a text-protocol SELECT of the same row returns on msgqd's connection
// (utf8mb4, any session time zone), so that a due row can be sent straight
// from the binlog without reading it back (docs/architecture.md#row-images).
//
// Which forms are reproducible is decided twice: from the schema
// (TextForm, chosen by message_table.cc from information_schema) and from
// the binlog's own column type and metadata (AppendText refuses a value
// whose type does not match the form, e.g. after an ALTER). Not
// reproducible, so always read back: FLOAT, DOUBLE, TIMESTAMP (its text
// depends on the session time zone), CHAR and BINARY (padding), ENUM, SET,
// BIT, geometry, ZEROFILL integers, text in a character set other than
// utf8mb4, utf8mb3 or binary, MariaDB's UUID and INET types, old-format
// (pre-5.6) temporal columns, and generated columns.
//
// Pure functions over untrusted bytes: never read past `value`.
// Thread-safe (no state).
#ifndef MSGQ_ENGINE_BINLOG_ROW_IMAGE_TEXT_H_
#define MSGQ_ENGINE_BINLOG_ROW_IMAGE_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace msgq::binlog {

// How a column's text form is built from its row-image value.
enum class TextForm : uint8_t {
  kNone,      // not reproducible: the row is read back by primary key
  kSigned,    // TINYINT..BIGINT: decimal
  kUnsigned,  // ... UNSIGNED
  kBytes,     // VARCHAR, VARBINARY, TEXT, BLOB, JSON: the bytes as stored
  kDecimal,   // DECIMAL(p,s): exactly s digits after the point
  kDate,      // YYYY-MM-DD
  kDateTime,  // YYYY-MM-DD hh:mm:ss[.f] with the column's digits
  kTime,      // [-]hh:mm:ss[.f], hours up to 838
  kYear,      // YYYY (0000 for 0)
};

// Appends the text form of one non-NULL value of binlog column `type` with
// table-map metadata `meta`: `value` holds the value's bytes after any
// length prefix (binlog_row_format.h ValueSize), `integer` its bits when
// `type` is an integer type. Returns false, appending nothing, when `type`
// does not carry `form` or the bytes are not a valid value of it.
bool AppendText(TextForm form, uint8_t type, uint16_t meta,
                absl::string_view value, uint64_t integer, std::string* out);

}  // namespace msgq::binlog

#endif  // MSGQ_ENGINE_BINLOG_ROW_IMAGE_TEXT_H_
