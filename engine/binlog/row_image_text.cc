#include "engine/binlog/row_image_text.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/binlog/binlog_row_format.h"

namespace msgq::binlog {
namespace {

// Big-endian unsigned value of `bytes` (at most 8).
uint64_t BigEndian(absl::string_view bytes) {
  uint64_t v = 0;
  for (char c : bytes) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

// `v` as at least `width` decimal digits.
void AppendPadded(uint64_t v, int width, std::string* out) {
  char buf[24];
  const int n = std::snprintf(buf, sizeof(buf), "%0*llu", width,
                              static_cast<unsigned long long>(v));
  out->append(buf, static_cast<size_t>(n));
}

// The fraction of a DATETIME2/TIME2 value, `fsp` digits, from its
// microseconds.
void AppendFraction(uint64_t micros, int fsp, std::string* out) {
  if (fsp == 0) return;
  uint64_t div = 1;
  for (int i = fsp; i < 6; ++i) div *= 10;
  out->push_back('.');
  AppendPadded(micros / div, fsp, out);
}

// Microseconds of a fraction stored in (fsp + 1) / 2 big-endian bytes.
uint64_t FractionMicros(absl::string_view bytes) {
  static constexpr uint64_t kScale[] = {0, 10000, 100, 1};
  return BigEndian(bytes) * kScale[bytes.size()];
}

bool AppendDecimal(uint16_t meta, absl::string_view value, std::string* out) {
  static constexpr int kDigitBytes[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
  static constexpr uint64_t kPow10[] = {1,         10,        100,     1000,
                                        10000,     100000,    1000000, 10000000,
                                        100000000, 1000000000};
  const int precision = meta >> 8, scale = meta & 0xff;
  if (precision < 1 || precision > 65 || scale > precision) return false;
  const int intg = precision - scale;
  const size_t size =
      static_cast<size_t>((intg / 9) * 4 + kDigitBytes[intg % 9] +
                          (scale / 9) * 4 + kDigitBytes[scale % 9]);
  if (value.size() != size) return false;
  std::string bytes(value);
  const bool negative = (static_cast<uint8_t>(bytes[0]) & 0x80) == 0;
  bytes[0] = static_cast<char>(bytes[0] ^ 0x80);
  if (negative) {
    for (char& c : bytes) c = static_cast<char>(~c);
  }
  absl::string_view rest(bytes);
  // Groups of digits, most significant first: (digits, value).
  std::string whole, fraction;
  auto take = [&](int digits, std::string* to) {
    const size_t n = static_cast<size_t>(kDigitBytes[digits]);
    const uint64_t v = BigEndian(rest.substr(0, n));
    rest.remove_prefix(n);
    if (v >= kPow10[digits]) return false;
    AppendPadded(v, digits, to);
    return true;
  };
  if (intg % 9 != 0 && !take(intg % 9, &whole)) return false;
  for (int i = 0; i < intg / 9; ++i) {
    if (!take(9, &whole)) return false;
  }
  for (int i = 0; i < scale / 9; ++i) {
    if (!take(9, &fraction)) return false;
  }
  if (scale % 9 != 0 && !take(scale % 9, &fraction)) return false;
  const size_t first = whole.find_first_not_of('0');
  whole = first == std::string::npos ? "0" : whole.substr(first);
  const bool zero =
      whole == "0" && fraction.find_first_not_of('0') == std::string::npos;
  if (negative && !zero) out->push_back('-');
  out->append(whole);
  if (scale > 0) absl::StrAppend(out, ".", fraction);
  return true;
}

bool AppendDateTime(uint16_t meta, absl::string_view value, std::string* out) {
  const int fsp = meta;
  if (fsp > 6 || value.size() != 5 + static_cast<size_t>(fsp + 1) / 2) {
    return false;
  }
  constexpr int64_t kOffset = int64_t{1} << 39;  // 0x8000000000
  const int64_t packed = static_cast<int64_t>(BigEndian(value.substr(0, 5)));
  if (packed < kOffset) return false;  // negative: not a DATETIME
  const uint64_t v = static_cast<uint64_t>(packed - kOffset);
  const uint64_t ymd = v >> 17, hms = v & 0x1ffff;
  const uint64_t ym = ymd >> 5;
  AppendPadded(ym / 13, 4, out);
  out->push_back('-');
  AppendPadded(ym % 13, 2, out);
  out->push_back('-');
  AppendPadded(ymd & 31, 2, out);
  out->push_back(' ');
  AppendPadded(hms >> 12, 2, out);
  out->push_back(':');
  AppendPadded((hms >> 6) & 63, 2, out);
  out->push_back(':');
  AppendPadded(hms & 63, 2, out);
  AppendFraction(FractionMicros(value.substr(5)), fsp, out);
  return true;
}

bool AppendTime(uint16_t meta, absl::string_view value, std::string* out) {
  const int fsp = meta;
  const size_t frac_bytes = static_cast<size_t>(fsp + 1) / 2;
  if (fsp > 6 || value.size() != 3 + frac_bytes) return false;
  // MySQL's my_time_packed_from_binary: (seconds part << 24) | micros, as a
  // signed number; a negative time with a fraction borrows from it.
  constexpr int64_t kIntOffset = 0x800000;
  int64_t intpart =
      static_cast<int64_t>(BigEndian(value.substr(0, 3))) - kIntOffset;
  int64_t packed = 0;
  if (frac_bytes == 3) {
    packed = static_cast<int64_t>(BigEndian(value)) - (kIntOffset << 24);
  } else {
    int64_t frac = static_cast<int64_t>(BigEndian(value.substr(3)));
    const int64_t scale = frac_bytes == 1 ? 10000 : 100;
    if (intpart < 0 && frac != 0) {
      ++intpart;
      frac -= int64_t{1} << (8 * frac_bytes);
    }
    packed = intpart * (int64_t{1} << 24) + frac * scale;
  }
  if (packed < 0) {
    out->push_back('-');
    packed = -packed;
  }
  const uint64_t u = static_cast<uint64_t>(packed);
  const uint64_t hms = u >> 24, micros = u & 0xffffff;
  if (micros > 999999) return false;
  AppendPadded((hms >> 12) & 0x3ff, 2, out);
  out->push_back(':');
  AppendPadded((hms >> 6) & 63, 2, out);
  out->push_back(':');
  AppendPadded(hms & 63, 2, out);
  AppendFraction(micros, fsp, out);
  return true;
}

bool IsBytesType(uint8_t type) {
  return type == kVarchar || type == kVarString || type == kBlob ||
         type == kTinyBlob || type == kMediumBlob || type == kLongBlob;
}

bool AppendValue(TextForm form, uint8_t type, uint16_t meta,
                 absl::string_view value, uint64_t integer, std::string* out) {
  switch (form) {
    case TextForm::kNone:
      return false;
    case TextForm::kSigned:
    case TextForm::kUnsigned: {
      if (!IsIntegerType(type)) return false;
      if (form == TextForm::kUnsigned) {
        absl::StrAppend(out, integer);
        return true;
      }
      const size_t size = IntegerSize(type);
      int64_t v = static_cast<int64_t>(integer);
      if (size < 8) {
        const uint64_t sign = uint64_t{1} << (8 * size - 1);
        v = static_cast<int64_t>((integer ^ sign) - sign);
      }
      absl::StrAppend(out, v);
      return true;
    }
    case TextForm::kBytes:
      if (!IsBytesType(type)) return false;
      out->append(value.data(), value.size());
      return true;
    case TextForm::kDecimal:
      return type == kNewDecimal && AppendDecimal(meta, value, out);
    case TextForm::kDate: {
      if ((type != kNewDate && type != kDate) || value.size() != 3) {
        return false;
      }
      const uint64_t v =
          static_cast<uint8_t>(value[0]) |
          (static_cast<uint64_t>(static_cast<uint8_t>(value[1])) << 8) |
          (static_cast<uint64_t>(static_cast<uint8_t>(value[2])) << 16);
      AppendPadded(v >> 9, 4, out);
      out->push_back('-');
      AppendPadded((v >> 5) & 15, 2, out);
      out->push_back('-');
      AppendPadded(v & 31, 2, out);
      return true;
    }
    case TextForm::kDateTime:
      return type == kDateTime2 && AppendDateTime(meta, value, out);
    case TextForm::kTime:
      return type == kTime2 && AppendTime(meta, value, out);
    case TextForm::kYear: {
      if (type != kYear || value.size() != 1) return false;
      const unsigned v = static_cast<uint8_t>(value[0]);
      if (v == 0) {
        out->append("0000");
      } else {
        absl::StrAppend(out, 1900 + v);
      }
      return true;
    }
  }
  return false;
}

}  // namespace

bool AppendText(TextForm form, uint8_t type, uint16_t meta,
                absl::string_view value, uint64_t integer, std::string* out) {
  const size_t before = out->size();
  if (AppendValue(form, type, meta, value, integer, out)) return true;
  out->resize(before);
  return false;
}

}  // namespace msgq::binlog
