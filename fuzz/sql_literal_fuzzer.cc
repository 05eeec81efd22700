// Fuzzes the id -> SQL literal writer (engine/sql/sql_literal.h).
//
// Input: the first byte picks the IdKind, the rest is the id. Property: the
// writer either rejects the id (INVALID_ARGUMENT, output untouched) or its
// output is exactly one SQL literal, read by the small tokenizer below with
// MariaDB's lexical rules, that decodes back to the id byte for byte, under
// both backslash rules (default and NO_BACKSLASH_ESCAPES) for quoted strings.
// Binary ids are never rejected; integer literals are plain decimals.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "engine/sql/sql_literal.h"

namespace {

void Fail(const char* why, absl::string_view literal) {
  fprintf(stderr, "sql_literal_fuzzer: %s: [%.*s]\n", why,
          static_cast<int>(literal.size()), literal.data());
  abort();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads one literal from the whole of `sql`: an optional charset introducer
// (_name followed by spaces), then a hex literal X'..', a quoted string '..'
// or (without introducer) a decimal integer with an optional '-'. Returns the
// bytes it denotes, or nullopt when `sql` is not exactly one such literal.
std::optional<std::string> ReadOneLiteral(absl::string_view sql,
                                          bool backslash_escapes) {
  size_t i = 0;
  bool introducer = false;
  if (i < sql.size() && sql[i] == '_') {
    ++i;
    while (i < sql.size() && (isalnum(static_cast<unsigned char>(sql[i])))) ++i;
    if (i == 1) return std::nullopt;
    const size_t name_end = i;
    while (i < sql.size() && sql[i] == ' ') ++i;
    if (i == name_end) return std::nullopt;
    introducer = true;
  }
  std::string out;
  if (i < sql.size() && (sql[i] == 'X' || sql[i] == 'x')) {
    ++i;
    if (i >= sql.size() || sql[i] != '\'') return std::nullopt;
    ++i;
    const size_t start = i;
    while (i < sql.size() && sql[i] != '\'') ++i;
    if (i >= sql.size()) return std::nullopt;  // unterminated
    const absl::string_view hex = sql.substr(start, i - start);
    ++i;
    if (hex.size() % 2 != 0) return std::nullopt;
    for (size_t k = 0; k < hex.size(); k += 2) {
      const int hi = HexValue(hex[k]);
      const int lo = HexValue(hex[k + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
    }
  } else if (i < sql.size() && sql[i] == '\'') {
    ++i;
    bool closed = false;
    while (i < sql.size()) {
      const char c = sql[i++];
      if (c == '\'') {
        if (i < sql.size() && sql[i] == '\'') {
          out.push_back('\'');
          ++i;
          continue;
        }
        closed = true;
        break;
      }
      if (c == '\\' && backslash_escapes) {
        if (i >= sql.size()) return std::nullopt;
        const char e = sql[i++];
        switch (e) {
          case '0':
            out.push_back('\0');
            break;
          case 'n':
            out.push_back('\n');
            break;
          case 'r':
            out.push_back('\r');
            break;
          case 't':
            out.push_back('\t');
            break;
          case 'b':
            out.push_back('\b');
            break;
          case 'Z':
            out.push_back('\x1a');
            break;
          default:
            out.push_back(e);
            break;
        }
        continue;
      }
      out.push_back(c);
    }
    if (!closed) return std::nullopt;
  } else if (!introducer) {
    const size_t start = i;
    if (i < sql.size() && sql[i] == '-') ++i;
    const size_t digits = i;
    while (i < sql.size() && sql[i] >= '0' && sql[i] <= '9') ++i;
    if (i == digits) return std::nullopt;
    out = std::string(sql.substr(start, i - start));
  } else {
    return std::nullopt;
  }
  if (i != sql.size()) return std::nullopt;  // more than one token
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const msgq::IdKind kind = static_cast<msgq::IdKind>(data[0] % 4);
  const absl::string_view id(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string out = "prefix";
  const absl::Status status = msgq::AppendIdLiteral(kind, id, &out);
  if (!status.ok()) {
    if (status.code() != absl::StatusCode::kInvalidArgument) {
      Fail("unexpected status code", out);
    }
    if (out != "prefix") Fail("rejected id changed the output", out);
    if (kind == msgq::IdKind::kBinary) Fail("binary id rejected", id);
    return 0;
  }
  if (out.compare(0, 6, "prefix") != 0) Fail("prefix clobbered", out);
  const absl::string_view literal = absl::string_view(out).substr(6);
  for (bool backslash_escapes : {true, false}) {
    const std::optional<std::string> decoded =
        ReadOneLiteral(literal, backslash_escapes);
    if (!decoded.has_value()) Fail("not exactly one literal", literal);
    if (*decoded != id) Fail("literal does not decode to the id", literal);
  }
  const bool integer = kind == msgq::IdKind::kSignedInteger ||
                       kind == msgq::IdKind::kUnsignedInteger;
  if (integer !=
      (literal.empty()
           ? false
           : (literal[0] == '-' || (literal[0] >= '0' && literal[0] <= '9')))) {
    Fail("integer kinds and only they write decimals", literal);
  }
  return 0;
}
