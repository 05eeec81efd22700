#include "engine/binlog/binlog_row_format.h"

#include <algorithm>

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

// The bytes of one column value in a row image: the length prefix (if any)
// is read from `r`; `*prefix` is its size. Error for unmeasurable types.
absl::Status ValueSize(uint8_t type, uint16_t meta, Reader r, size_t* prefix,
                       size_t* size) {
  *prefix = 0;
  uint64_t n = 0;
  switch (type) {
    case kTiny:
    case kShort:
    case kInt24:
    case kLong:
    case kLongLong:
      *size = IntegerSize(type);
      return absl::OkStatus();
    case kNull:
      *size = 0;
      return absl::OkStatus();
    case kYear:
      *size = 1;
      return absl::OkStatus();
    case kDate:
    case kNewDate:
    case kTime:
      *size = 3;
      return absl::OkStatus();
    case kTimestamp:
      *size = 4;
      return absl::OkStatus();
    case kDateTime:
      *size = 8;
      return absl::OkStatus();
    case kFloat:
    case kDouble:
      *size = meta == 4 || meta == 8 ? meta : (type == kFloat ? 4 : 8);
      return absl::OkStatus();
    case kTimestamp2:
      *size = 4 + (std::min<int>(meta, 6) + 1) / 2;
      return absl::OkStatus();
    case kDateTime2:
      *size = 5 + (std::min<int>(meta, 6) + 1) / 2;
      return absl::OkStatus();
    case kTime2:
      *size = 3 + (std::min<int>(meta, 6) + 1) / 2;
      return absl::OkStatus();
    case kNewDecimal: {
      const int precision = meta >> 8, scale = meta & 0xff;
      if (precision > 65 || scale > precision) return Malformed("decimal");
      *size = DecimalBytes(precision - scale) + DecimalBytes(scale);
      return absl::OkStatus();
    }
    case kBit:
      *size = (meta >> 8) + ((meta & 0xff) > 0 ? 1 : 0);
      return absl::OkStatus();
    case kVarchar:
    case kVarString:
      *prefix = meta < 256 ? 1 : 2;
      break;
    case kBlob:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
    case kGeometry:
    case kJson:
      if (meta < 1 || meta > 4) return Malformed("blob length size");
      *prefix = meta;
      break;
    case kString:
    case kEnum:
    case kSet: {
      uint8_t real = static_cast<uint8_t>(meta >> 8);
      unsigned length = meta & 0xff;
      if ((real & 0x30) != 0x30) {  // CHAR longer than 255 bytes
        length |= ((real & 0x30) ^ 0x30) << 4;
        real |= 0x30;
      }
      if (real == kEnum || real == kSet) {
        *size = length;
        return absl::OkStatus();
      }
      *prefix = length > 255 ? 2 : 1;
      break;
    }
    default:
      return absl::UnimplementedError(
          absl::StrCat("binlog column type ", type, " is not supported"));
  }
  if (!r.Uint(*prefix, &n)) return Malformed("value length");
  *size = static_cast<size_t>(n);
  return absl::OkStatus();
}

}  // namespace msgq::binlog
