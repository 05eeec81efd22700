#include "server/mysql_protocol/result_set.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "server/mysql_protocol/handshake.h"
#include "server/mysql_protocol/packet.h"

namespace msgq::mysql_protocol {
namespace {

struct TypeInfo {
  uint8_t type;
  bool numeric;
  bool binary;  // binary charset (numbers, dates, blobs, binary strings)
  uint32_t length;
  uint16_t flags;
};

const std::map<std::string, TypeInfo>& Types() {
  static const auto* types = new std::map<std::string, TypeInfo>{
      {"tinyint", {kTypeTiny, true, true, 4, 0}},
      {"smallint", {kTypeShort, true, true, 6, 0}},
      {"mediumint", {kTypeInt24, true, true, 9, 0}},
      {"int", {kTypeLong, true, true, 11, 0}},
      {"integer", {kTypeLong, true, true, 11, 0}},
      {"bigint", {kTypeLongLong, true, true, 20, 0}},
      {"float", {kTypeFloat, true, true, 12, 0}},
      {"double", {kTypeDouble, true, true, 22, 0}},
      {"decimal", {kTypeNewDecimal, true, true, 65, 0}},
      {"bit", {kTypeBit, false, true, 64, 0}},
      {"year", {kTypeYear, true, true, 4, 0}},
      {"date", {kTypeDate, false, true, 10, 0}},
      {"time", {kTypeTime, false, true, 17, 0}},
      {"datetime", {kTypeDateTime, false, true, 26, 0}},
      {"timestamp", {kTypeTimestamp, false, true, 26, 0}},
      {"char", {kTypeString, false, false, 255, 0}},
      {"varchar", {kTypeVarString, false, false, 65535, 0}},
      {"binary", {kTypeString, false, true, 255, kBinaryFlag}},
      {"varbinary", {kTypeVarString, false, true, 65535, kBinaryFlag}},
      {"tinytext", {kTypeBlob, false, false, 255, kBlobFlag}},
      {"text", {kTypeBlob, false, false, 65535, kBlobFlag}},
      {"mediumtext", {kTypeBlob, false, false, 16777215, kBlobFlag}},
      {"longtext", {kTypeBlob, false, false, 0xFFFFFFFF, kBlobFlag}},
      {"tinyblob", {kTypeBlob, false, true, 255, kBlobFlag | kBinaryFlag}},
      {"blob", {kTypeBlob, false, true, 65535, kBlobFlag | kBinaryFlag}},
      {"mediumblob",
       {kTypeBlob, false, true, 16777215, kBlobFlag | kBinaryFlag}},
      {"longblob",
       {kTypeBlob, false, true, 0xFFFFFFFF, kBlobFlag | kBinaryFlag}},
      {"json", {kTypeJson, false, false, 0xFFFFFFFF, kBlobFlag}},
      {"enum", {kTypeString, false, false, 255, kEnumFlag}},
      {"set", {kTypeString, false, false, 255, kSetFlag}},
  };
  return *types;
}

// N of "varchar(N)" / "decimal(N,M)", if present.
std::optional<uint32_t> DeclaredLength(absl::string_view column_type) {
  const size_t open = column_type.find('(');
  if (open == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = column_type.substr(open + 1);
  const size_t end = rest.find_first_of(",)");
  uint32_t n = 0;
  if (end == absl::string_view::npos ||
      !absl::SimpleAtoi(rest.substr(0, end), &n)) {
    return std::nullopt;
  }
  return n;
}

void AppendValue(std::string& out, const std::optional<std::string>& v) {
  if (v.has_value()) {
    AppendLenEncString(out, *v);
  } else {
    AppendInt1(out, 0xFB);
  }
}

}  // namespace

ColumnDefinition DefinitionOf(absl::string_view keyspace,
                              absl::string_view table, const Column& column) {
  ColumnDefinition def;
  def.schema = std::string(keyspace);
  def.table = std::string(table);
  def.name = column.name;
  const auto& types = Types();
  const auto it = types.find(absl::AsciiStrToLower(column.data_type));
  if (it == types.end()) {
    def.type = kTypeVarString;
    def.length = 65535;
    return def;
  }
  const TypeInfo& info = it->second;
  def.type = info.type;
  def.flags = info.flags;
  def.length = info.length;
  if (info.numeric) def.flags |= kNumFlag;
  if (info.binary) def.charset = kBinaryCharset;
  if (absl::StrContains(absl::AsciiStrToLower(column.column_type),
                        "unsigned")) {
    def.flags |= kUnsignedFlag;
  }
  if (std::optional<uint32_t> n = DeclaredLength(column.column_type);
      n.has_value() && !info.numeric) {
    // Characters of up to 4 bytes in utf8mb4.
    def.length = info.binary ? *n : *n * 4;
  }
  if (absl::EqualsIgnoreCase(column.name, "id")) def.flags |= kPriKeyFlag;
  return def;
}

std::string ColumnDefinitionPayload(const ColumnDefinition& def) {
  std::string out;
  AppendLenEncString(out, "def");
  AppendLenEncString(out, def.schema);
  AppendLenEncString(out, def.table);
  AppendLenEncString(out, def.table);  // org_table
  AppendLenEncString(out, def.name);
  AppendLenEncString(out, def.name);  // org_name
  AppendLenEncInt(out, 0x0C);
  AppendInt2(out, def.charset);
  AppendInt4(out, def.length);
  AppendInt1(out, def.type);
  AppendInt2(out, def.flags);
  AppendInt1(out, def.decimals);
  AppendInt2(out, 0);  // filler
  return out;
}

std::string TextRowPayload(const std::vector<std::optional<std::string>>& v) {
  std::string out;
  for (const auto& value : v) AppendValue(out, value);
  return out;
}

std::string PackedRowPayload(const PackedRow& row) {
  std::string out;
  out.reserve(row.values.size() + row.lengths.size() * 2);
  size_t offset = 0;
  for (int64_t length : row.lengths) {
    if (length < 0 || size_t(length) > row.values.size() - offset) {
      AppendInt1(out, 0xFB);
      continue;
    }
    AppendLenEncString(out, absl::string_view(row.values)
                                .substr(offset, static_cast<size_t>(length)));
    offset += static_cast<size_t>(length);
  }
  return out;
}

std::string StreamHeader(uint8_t& seq,
                         const std::vector<ColumnDefinition>& columns) {
  std::string count;
  AppendLenEncInt(count, columns.size());
  std::string out = Frame(seq, count);
  for (const ColumnDefinition& c : columns) {
    out += Frame(seq, ColumnDefinitionPayload(c));
  }
  out += Frame(seq, EofPayload());
  return out;
}

std::string SmallResultSet(
    uint8_t& seq, const std::vector<ColumnDefinition>& columns,
    const std::vector<std::vector<std::optional<std::string>>>& rows) {
  std::string out = StreamHeader(seq, columns);
  for (const auto& row : rows) out += Frame(seq, TextRowPayload(row));
  out += Frame(seq, EofPayload());
  return out;
}

}  // namespace msgq::mysql_protocol
