// Test values for tests/binlog_image_property_test.cc: one column per
// column type msgq renders from a binlog row image (Specs, SpecDdl), and
// random SQL literals for them, boundaries and NULLs mixed in (Literal,
// InsertSql), from a seeded generator.
#ifndef MSGQ_TESTS_BINLOG_IMAGE_VALUES_H_
#define MSGQ_TESTS_BINLOG_IMAGE_VALUES_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace msgq::testing::image_values {

using Rng = std::mt19937_64;

// clang-format off
enum class Kind { kInt, kUInt, kDecimal, kDate, kDateTime, kTime, kYear, kText,
                  kBytes, kJson };
// clang-format on

// A column of the property table, c0, c1, ... in order. a: integer bits,
// decimal precision, fractional digits, or the most characters (text) or
// bytes (binary); b: decimal scale or the most bytes of text.
struct Spec {
  std::string type;
  Kind kind;
  int a = 0, b = 0;
  bool bmp_only = false;  // utf8mb3
};

inline std::vector<Spec> Specs() {
  std::vector<Spec> s;
  const char* ints[] = {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT"};
  for (int i = 0; i < 5; ++i) {
    s.push_back({ints[i], Kind::kInt, i == 4 ? 64 : 8 * (i + 1)});
    s.push_back({absl::StrCat(ints[i], " UNSIGNED"), Kind::kUInt, s.back().a});
  }
  for (auto [p, d] : {std::pair{1, 0}, {10, 2}, {18, 9}, {65, 30}, {5, 5}}) {
    s.push_back(
        {absl::StrCat("DECIMAL(", p, ",", d, ")"), Kind::kDecimal, p, d});
  }
  for (int f = 0; f <= 6; ++f) {
    const std::string fsp = f == 0 ? "" : absl::StrCat("(", f, ")");
    s.push_back({"DATETIME" + fsp, Kind::kDateTime, f});
    s.push_back({"TIME" + fsp, Kind::kTime, f});
  }
  // Big rows fill MEDIUMBLOB and LONGTEXT to 100000 bytes, not their limits.
  for (const Spec& t : std::vector<Spec>{
           {"DATE", Kind::kDate},
           {"YEAR", Kind::kYear},
           {"VARCHAR(20) CHARACTER SET utf8mb4", Kind::kText, 20, 80},
           {"VARCHAR(20) CHARACTER SET utf8mb3", Kind::kText, 20, 60, true},
           {"VARCHAR(300)", Kind::kText, 300, 1200},
           {"VARBINARY(64)", Kind::kBytes, 64},
           {"TINYTEXT", Kind::kText, 255, 255},
           {"TEXT", Kind::kText, 65535, 65535},
           {"MEDIUMBLOB", Kind::kBytes, 100000},
           {"LONGTEXT", Kind::kText, 100000, 100000},
           {"JSON", Kind::kJson}}) {
    s.push_back(t);
  }
  return s;
}

inline std::string SpecDdl() {
  std::vector<std::string> defs;
  for (const Spec& s : Specs())
    defs.push_back(absl::StrCat("c", defs.size(), " ", s.type));
  return absl::StrJoin(defs, ", ");
}

// What the session's sql_mode lets a DATE hold.
struct Modes {
  bool zero_date = false;     // '0000-00-00'
  bool zero_in_date = false;  // '2020-00-05'
};

// Up to `chars` characters and `bytes` bytes: widest (or random) ones, then
// 'z' up to the byte limit. Random ones are 1 to 4 bytes of UTF-8 (NUL,
// quotes, controls, U+FFFD, U+10FFFF; none of 4 bytes for utf8mb3).
inline std::string Fill(Rng& rng, int chars, int bytes, bool bmp_only,
                        bool widest) {
  // clang-format off
  static constexpr absl::string_view kChars[] = {
      {"\0", 1}, "a", "Z", "0", " ", "'", "\\", "\"", "\n", "\t", "%", "\x7f",
      "é", "ß", "Ω", "€", "中", "\xef\xbf\xbd",
      "😀", "🎉", "𝄞", "\xf4\x8f\xbf\xbf"};
  // clang-format on
  const size_t pool = std::size(kChars) - (bmp_only ? 4 : 0);
  const int w = bmp_only ? 3 : 4;
  std::string o;
  int n = 0;
  for (; n < chars && static_cast<int>(o.size()) + w <= bytes; ++n) {
    o += std::string(widest ? kChars[pool - 1] : kChars[rng() % pool]);
  }
  for (; n < chars && static_cast<int>(o.size()) < bytes; ++n) o += 'z';
  return o;
}

inline std::string Digits(Rng& rng, int n) {
  std::string d;
  for (int i = 0; i < n; ++i) d += static_cast<char>('0' + rng() % 10);
  return d;
}

inline std::string JsonString(absl::string_view s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<uint8_t>(c) < 0x20) {
      absl::StrAppendFormat(&o, "\\u%04x", static_cast<int>(c));
    } else {
      o += c;
    }
  }
  return o + "\"";
}

inline std::string Text(absl::string_view s) {
  return absl::StrCat("_utf8mb4 X'", absl::BytesToHexString(s), "'");
}
inline std::string Quoted(absl::string_view s) {
  return absl::StrCat("'", s, "'");
}

inline std::string RandomDate(Rng& rng) {
  const int y = 1 + rng() % 9999, m = 1 + rng() % 12;
  const bool leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
  const int days = m == 2 ? (leap ? 29 : 28) : 30 + ((m + m / 8) % 2);
  return absl::StrFormat("%04d-%02d-%02d", y, m, 1 + rng() % days);
}

inline std::string RandomHms(Rng& rng, int hours) {
  return absl::StrFormat("%02d:%02d:%02d", static_cast<int>(rng() % hours),
                         static_cast<int>(rng() % 60),
                         static_cast<int>(rng() % 60));
}

// An SQL literal for one value of `s`: NULL one time in ten, a boundary one
// time in four, random otherwise; `big` rows fill text and binary columns.
inline std::string Literal(const Spec& s, Rng& rng, const Modes& modes,
                           bool big) {
  if (!big && rng() % 10 == 0) return "NULL";
  const int fsp = s.kind == Kind::kDateTime || s.kind == Kind::kTime ? s.a : 0;
  const auto frac = [&](char digit) {  // '0', '9' or 'r'andom
    if (fsp == 0) return std::string();
    return "." + (digit == 'r' ? Digits(rng, fsp) : std::string(fsp, digit));
  };
  const std::string sign = rng() % 2 ? "-" : "";
  const uint64_t max = s.a >= 64 ? ~uint64_t{0} : (uint64_t{1} << s.a) - 1;
  std::vector<std::string> edges;
  std::string v;
  switch (s.kind) {
    case Kind::kInt:
    case Kind::kUInt:
      if (s.kind == Kind::kUInt) {
        edges = {"0", "1", absl::StrCat(max)};
        v = absl::StrCat((rng() & max) >> (rng() % s.a));
        break;
      }
      edges = {"0", "-1", absl::StrCat(max >> 1),
               absl::StrCat(-static_cast<int64_t>(max >> 1) - 1)};
      v = absl::StrCat(sign, (rng() & max >> 1) >> (rng() % s.a));
      break;
    case Kind::kDecimal: {
      const int whole = s.a - s.b;
      const std::string nines = (whole > 0 ? std::string(whole, '9') : "0") +
                                (s.b > 0 ? "." : "") + std::string(s.b, '9');
      edges = {"'0'",
               "'-0.5'",
               Quoted(nines),
               Quoted("-" + nines),
               Quoted("-0." + std::string(s.b, '0') + "4"),  // rounds to 0
               Quoted("-0." + std::string(std::max(s.b - 1, 0), '0') + "1")};
      const std::string w = Digits(rng, rng() % (whole + 1));
      const std::string f = Digits(rng, rng() % (s.b + 1));
      v = Quoted(
          absl::StrCat(sign, w.empty() ? "0" : w, f.empty() ? "" : ".", f));
      break;
    }
    case Kind::kDate:
      edges = {"'1000-01-01'", "'9999-12-31'", "'0001-01-01'", "'2024-02-29'"};
      if (modes.zero_date) edges.push_back("'0000-00-00'");
      if (modes.zero_in_date) edges.push_back("'2020-00-05'");
      v = Quoted(RandomDate(rng));
      break;
    case Kind::kDateTime:
      edges = {Quoted("1000-01-01 00:00:00" + frac('0')),
               Quoted("9999-12-31 23:59:59" + frac('9'))};
      if (modes.zero_date) edges.push_back("'0000-00-00 00:00:00'");
      v = Quoted(
          absl::StrCat(RandomDate(rng), " ", RandomHms(rng, 24), frac('r')));
      break;
    case Kind::kTime:
      edges = {"'00:00:00'",
               "'-00:00:00'",
               "'-00:00:01'",
               Quoted("-838:59:59" + frac('9')),
               Quoted("838:59:59" + frac('9')),
               Quoted("838:59:59" + frac('0'))};
      if (fsp > 0) {  // negative, less than a second
        edges.push_back("'-00:00:00.5'");
        edges.push_back(Quoted("-00:00:00." + std::string(fsp - 1, '0') + "1"));
      }
      v = Quoted(absl::StrCat(sign, RandomHms(rng, 839), frac('r')));
      break;
    case Kind::kYear:
      edges = {"0", "1901", "2155"};
      v = absl::StrCat(1901 + rng() % 255);
      break;
    case Kind::kText:
      if (big) return Text(Fill(rng, s.a, s.b, s.bmp_only, false));
      edges = {Text(""), Text(std::string("'\\\"\n\t") + '\0' + "%_é€" +
                              (s.bmp_only ? "中" : "😀"))};
      if (s.b <= 1200) {
        edges.push_back(Text(Fill(rng, s.a, s.b, s.bmp_only, true)));
      }
      v = Text(Fill(rng, (rng() % 41) % (s.a + 1), 160, s.bmp_only, false));
      break;
    case Kind::kBytes: {
      edges = {"X''", "X'00'", "X'" + std::string(128, 'F') + "'"};
      std::string b(big ? s.a : rng() % std::min(s.a + 1, 65), '\0');
      for (char& c : b) c = static_cast<char>(rng());
      v = absl::StrCat("X'", absl::BytesToHexString(b), "'");
      if (big) return v;
      break;
    }
    case Kind::kJson:  // stored as text: spaces and newlines kept
      for (const char* e :
           {"{}", "[]", "null", "\"\"", "0", "{\"k\": \"\\u0000\"}"}) {
        edges.push_back(Text(e));
      }
      v = Text(absl::StrCat(
          "{\"s\": ",
          JsonString(Fill(rng, big ? 50000 : static_cast<int>(rng() % 12),
                          big ? 100000 : 48, false, false)),
          ",\n \"a\": [", static_cast<int64_t>(rng()) >> rng() % 64, ", -",
          1 + rng() % 999, ".5e-", rng() % 300, ", true, null, {}]}"));
      if (big) return v;
      break;
  }
  return rng() % 4 == 0 ? edges[rng() % edges.size()] : v;
}

// INSERT of ids [from, to] into msgq.t, due (time_next in the past) and
// unacked; ids 7, 57, ... all NULL, ids 100, 200, 300 big.
inline std::string InsertSql(Rng& rng, const Modes& modes, int from, int to) {
  std::vector<Spec> specs = Specs();
  std::string sql = "INSERT INTO msgq.t (id, time_next, message";
  for (size_t i = 0; i < specs.size(); ++i) absl::StrAppend(&sql, ", c", i);
  specs.insert(specs.begin(), Spec{"", Kind::kJson});  // message
  sql += ") VALUES ";
  for (int id = from; id <= to; ++id) {
    absl::StrAppend(&sql, id == from ? "(" : ", (", id, ", 1000");
    for (const Spec& s : specs) {
      absl::StrAppend(
          &sql, ", ",
          id % 50 == 7 ? "NULL" : Literal(s, rng, modes, id % 100 == 0));
    }
    sql += ")";
  }
  return sql;
}

}  // namespace msgq::testing::image_values

#endif  // MSGQ_TESTS_BINLOG_IMAGE_VALUES_H_
