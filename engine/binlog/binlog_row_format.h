// Binlog ROW format primitives for BinlogDecoder: a bounds-checked reader
// over untrusted event bytes, MySQL column type codes, and how many bytes a
// column's table-map metadata and row-image value take.
//
// Every function is pure and never reads past the bytes it is given.
// Thread-safe (no state).
#ifndef MSGQ_ENGINE_BINLOG_BINLOG_ROW_FORMAT_H_
#define MSGQ_ENGINE_BINLOG_BINLOG_ROW_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace msgq::binlog {

// MySQL column type codes (enum_field_types) of the ROW format.
enum ColumnType : uint8_t {
  kDecimal = 0,
  kTiny = 1,
  kShort = 2,
  kLong = 3,
  kFloat = 4,
  kDouble = 5,
  kNull = 6,
  kTimestamp = 7,
  kLongLong = 8,
  kInt24 = 9,
  kDate = 10,
  kTime = 11,
  kDateTime = 12,
  kYear = 13,
  kNewDate = 14,
  kVarchar = 15,
  kBit = 16,
  kTimestamp2 = 17,
  kDateTime2 = 18,
  kTime2 = 19,
  kJson = 245,
  kNewDecimal = 246,
  kEnum = 247,
  kSet = 248,
  kTinyBlob = 249,
  kMediumBlob = 250,
  kLongBlob = 251,
  kBlob = 252,
  kVarString = 253,
  kString = 254,
  kGeometry = 255,
};

// DATA_LOSS "malformed binlog event: <what>".
absl::Status Malformed(absl::string_view what);

// A bounds-checked little-endian reader over untrusted bytes; every method
// returns false (and consumes nothing) when the bytes run out.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  size_t left() const { return data_.size(); }
  bool Skip(size_t n) {
    if (n > data_.size()) return false;
    data_.remove_prefix(n);
    return true;
  }
  bool Bytes(size_t n, absl::string_view* out) {
    if (n > data_.size()) return false;
    *out = data_.substr(0, n);
    data_.remove_prefix(n);
    return true;
  }
  bool Uint(size_t n, uint64_t* out) {
    if (n > 8 || n > data_.size()) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[i])) << (8 * i);
    }
    data_.remove_prefix(n);
    *out = v;
    return true;
  }
  // A length-encoded integer (MySQL packed integer).
  bool Packed(uint64_t* out) {
    uint64_t first = 0;
    if (!Uint(1, &first)) return false;
    if (first < 251) {
      *out = first;
      return true;
    }
    if (first == 252) return Uint(2, out);
    if (first == 253) return Uint(3, out);
    if (first == 254) return Uint(8, out);
    return false;  // 251 (NULL) and 255 are not lengths
  }
  absl::string_view rest() const { return data_; }

 private:
  absl::string_view data_;
};

bool IsIntegerType(uint8_t type);
// Integer or decimal/float: the columns SIGNEDNESS metadata covers.
bool IsNumericType(uint8_t type);
// Bytes of an integer column value (TINY 1 ... LONGLONG 8).
size_t IntegerSize(uint8_t type);
// Reads a column's metadata from a TABLE_MAP event's metadata block.
bool ReadMeta(uint8_t type, Reader* r, uint16_t* meta);
// The bytes of one column value in a row image: `*prefix` length bytes
// (read, not consumed, from `r`) then `*size` bytes. UNIMPLEMENTED for the
// pre-5.0 DECIMAL and unknown types; DATA_LOSS for impossible metadata or
// a cut length.
absl::Status ValueSize(uint8_t type, uint16_t meta, Reader r, size_t* prefix,
                       size_t* size);

}  // namespace msgq::binlog

#endif  // MSGQ_ENGINE_BINLOG_BINLOG_ROW_FORMAT_H_
