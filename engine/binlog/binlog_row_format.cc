#include "engine/binlog/binlog_row_format.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"

namespace msgq::binlog {

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed binlog event: ", what));
}

bool IsIntegerType(uint8_t type) {
  return type == kTiny || type == kShort || type == kInt24 || type == kLong ||
         type == kLongLong;
}

bool IsNumericType(uint8_t type) {
  return IsIntegerType(type) || type == kFloat || type == kDouble ||
         type == kNewDecimal || type == kDecimal;
}

size_t IntegerSize(uint8_t type) {
  switch (type) {
    case kTiny:
      return 1;
    case kShort:
      return 2;
    case kInt24:
      return 3;
    case kLong:
      return 4;
    default:
      return 8;
  }
}

// Metadata bytes a column type takes in a TABLE_MAP event, and its value.
bool ReadMeta(uint8_t type, Reader* r, uint16_t* meta) {
  uint64_t a = 0, b = 0;
  switch (type) {
    case kFloat:
    case kDouble:
    case kBlob:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
    case kGeometry:
    case kJson:
    case kTimestamp2:
    case kDateTime2:
    case kTime2:
      if (!r->Uint(1, &a)) return false;
      *meta = static_cast<uint16_t>(a);
      return true;
    case kVarchar:
    case kVarString:
    case kBit:
      if (!r->Uint(2, &a)) return false;  // little-endian
      *meta = static_cast<uint16_t>(a);
      return true;
    case kNewDecimal:
    case kString:
    case kEnum:
    case kSet:
      if (!r->Uint(1, &a) || !r->Uint(1, &b)) return false;  // big-endian
      *meta = static_cast<uint16_t>((a << 8) | b);
      return true;
    default:
      *meta = 0;
      return true;
  }
}

size_t DecimalBytes(int digits) {
  static constexpr int kDigitBytes[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
  return static_cast<size_t>((digits / 9) * 4 + kDigitBytes[digits % 9]);
}

namespace {

// Bytes of the fractional seconds of a TIMESTAMP2, DATETIME2 or TIME2.
size_t FractionBytes(uint16_t meta) {
  return static_cast<size_t>((std::min<int>(meta, 6) + 1) / 2);
}

// The width of a value whose type (and metadata) fix it; nullopt for the
// types whose width the value or the string metadata gives.
std::optional<size_t> FixedWidth(uint8_t type, uint16_t meta) {
  switch (type) {
    case kTiny:
    case kShort:
    case kInt24:
    case kLong:
    case kLongLong:
      return IntegerSize(type);
    case kNull:
      return 0;
    case kYear:
      return 1;
    case kDate:
    case kNewDate:
    case kTime:
      return 3;
    case kTimestamp:
      return 4;
    case kDateTime:
      return 8;
    case kFloat:
    case kDouble:
      return meta == 4 || meta == 8 ? meta : (type == kFloat ? 4 : 8);
    case kTimestamp2:
      return 4 + FractionBytes(meta);
    case kDateTime2:
      return 5 + FractionBytes(meta);
    case kTime2:
      return 3 + FractionBytes(meta);
    case kBit:
      return (meta >> 8) + ((meta & 0xff) > 0 ? 1 : 0);
    default:
      return std::nullopt;
  }
}

// CHAR, ENUM and SET (all kString on the wire): the real type is the high
// byte of the metadata, except for a CHAR over 255 bytes, whose length
// keeps two more bits there.
absl::Status StringSize(uint16_t meta, size_t* prefix, size_t* size) {
  uint8_t real = static_cast<uint8_t>(meta >> 8);
  unsigned length = meta & 0xff;
  if ((real & 0x30) != 0x30) {  // CHAR longer than 255 bytes
    length |= ((real & 0x30) ^ 0x30) << 4;
    real |= 0x30;
  }
  if (real == kEnum || real == kSet) {
    *size = length;
  } else {
    *prefix = length > 255 ? 2 : 1;
  }
  return absl::OkStatus();
}

// The types of no fixed width: `*size` when the metadata gives it
// (DECIMAL, ENUM, SET), else `*prefix`, the bytes of the value's length.
absl::Status VariableSize(uint8_t type, uint16_t meta, size_t* prefix,
                          size_t* size) {
  switch (type) {
    case kNewDecimal: {
      const int precision = meta >> 8, scale = meta & 0xff;
      if (precision > 65 || scale > precision) return Malformed("decimal");
      *size = DecimalBytes(precision - scale) + DecimalBytes(scale);
      return absl::OkStatus();
    }
    case kVarchar:
    case kVarString:
      *prefix = meta < 256 ? 1 : 2;
      return absl::OkStatus();
    case kBlob:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
    case kGeometry:
    case kJson:
      if (meta < 1 || meta > 4) return Malformed("blob length size");
      *prefix = meta;
      return absl::OkStatus();
    case kString:
    case kEnum:
    case kSet:
      return StringSize(meta, prefix, size);
    default:
      return absl::UnimplementedError(
          absl::StrCat("binlog column type ", type, " is not supported"));
  }
}

}  // namespace

absl::Status ValueSize(uint8_t type, uint16_t meta, Reader r, size_t* prefix,
                       size_t* size) {
  *prefix = 0;
  if (std::optional<size_t> fixed = FixedWidth(type, meta)) {
    *size = *fixed;
    return absl::OkStatus();
  }
  if (absl::Status s = VariableSize(type, meta, prefix, size);
      !s.ok() || *prefix == 0) {
    return s;
  }
  uint64_t n = 0;
  if (!r.Uint(*prefix, &n)) return Malformed("value length");
  *size = static_cast<size_t>(n);
  return absl::OkStatus();
}

}  // namespace msgq::binlog
