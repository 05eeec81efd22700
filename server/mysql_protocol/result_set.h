// Text-protocol result sets: column definitions (ColumnDefinition41), the
// type mapping from a message table's columns (information_schema DATA_TYPE
// and COLUMN_TYPE) to MySQL column types, and rows.
//
// A streamed result set is: column count, one definition per streamed
// column, EOF, then one row per message for as long as the stream lasts
// (it never ends with an EOF: the client disconnects, or an ERR packet ends
// it when the table goes away). Pure functions: thread-compatible.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_RESULT_SET_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_RESULT_SET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/message_table.h"
#include "engine/queue/message.h"

namespace msgq::mysql_protocol {

// MySQL column types (enum_field_types) msgq sends.
enum ColumnType : uint8_t {
  kTypeDecimal = 0x00,
  kTypeTiny = 0x01,
  kTypeShort = 0x02,
  kTypeLong = 0x03,
  kTypeFloat = 0x04,
  kTypeDouble = 0x05,
  kTypeTimestamp = 0x07,
  kTypeLongLong = 0x08,
  kTypeInt24 = 0x09,
  kTypeDate = 0x0A,
  kTypeTime = 0x0B,
  kTypeDateTime = 0x0C,
  kTypeYear = 0x0D,
  kTypeBit = 0x10,
  kTypeJson = 0xF5,
  kTypeNewDecimal = 0xF6,
  kTypeEnum = 0xF7,
  kTypeSet = 0xF8,
  kTypeBlob = 0xFC,
  kTypeVarString = 0xFD,
  kTypeString = 0xFE,
  kTypeGeometry = 0xFF,
};

// Column flags.
inline constexpr uint16_t kNotNullFlag = 0x0001;
inline constexpr uint16_t kPriKeyFlag = 0x0002;
inline constexpr uint16_t kBlobFlag = 0x0010;
inline constexpr uint16_t kUnsignedFlag = 0x0020;
inline constexpr uint16_t kBinaryFlag = 0x0080;
inline constexpr uint16_t kEnumFlag = 0x0100;
inline constexpr uint16_t kSetFlag = 0x0800;
inline constexpr uint16_t kNumFlag = 0x8000;

struct ColumnDefinition {
  std::string schema;
  std::string table;
  std::string name;
  uint8_t type = kTypeVarString;
  uint16_t charset = 45;  // utf8mb4_general_ci; 63 = binary
  uint32_t length = 0;    // display length
  uint16_t flags = 0;
  uint8_t decimals = 0;
};

// The definition of a streamed column of `keyspace`.`table`. Unknown
// DATA_TYPEs are sent as VAR_STRING (the text protocol carries text anyway).
ColumnDefinition DefinitionOf(absl::string_view keyspace,
                              absl::string_view table, const Column& column);

std::string ColumnDefinitionPayload(const ColumnDefinition& def);

// A text-protocol row: each value length-encoded, NULL as 0xFB.
std::string TextRowPayload(const std::vector<std::optional<std::string>>& v);
// The same from a message's packed row (lengths -1 for NULL). A packed row
// whose lengths overrun its values gives the values it has, the rest NULL.
std::string PackedRowPayload(const PackedRow& row);

// A whole small result set (count, definitions, EOF, rows, EOF), framed
// from `seq` on.
std::string SmallResultSet(
    uint8_t& seq, const std::vector<ColumnDefinition>& columns,
    const std::vector<std::vector<std::optional<std::string>>>& rows);

// The framed header of a streamed result set (count, definitions, EOF).
std::string StreamHeader(uint8_t& seq,
                         const std::vector<ColumnDefinition>& columns);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_RESULT_SET_H_
