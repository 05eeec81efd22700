#include "engine/groups/group_filter.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/utf8.h"
#include "engine/groups/group_name.h"

namespace msgq {
namespace {

// msgq's own columns: they change as the default group works, so no group
// can select rows by them.
constexpr absl::string_view kBookkeeping[] = {"epoch",      "time_next",
                                              "time_acked", "time_created",
                                              "time_dead",  "last_error"};

// Words that are not column names unless backquoted.
constexpr absl::string_view kKeywords[] = {
    "AND",  "OR",    "XOR",  "NOT",   "IN",     "IS",     "NULL",
    "LIKE", "RLIKE", "TRUE", "FALSE", "REGEXP", "BETWEEN"};

template <typename... Args>
absl::Status FilterError(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat("filter: ", args...));
}

bool IsKeyword(absl::string_view word) {
  for (absl::string_view k : kKeywords) {
    if (absl::EqualsIgnoreCase(word, k)) return true;
  }
  return false;
}

bool IsWordStart(char c) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IsWordChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '$';
}
bool IsDigit(char c) {
  return absl::ascii_isdigit(static_cast<unsigned char>(c));
}

enum class TokenKind {
  kEnd,
  kWord,
  kQuotedName,
  kString,
  kNumber,
  kEquals,
  kOperator,
  kOpen,
  kClose,
  kComma,
};

struct Token {
  TokenKind kind;
  std::string text;  // the word, name, string's value, number or operator
  size_t pos;        // from 1
};

// How a token reads in an error ("found ...").
std::string Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kEnd:
      return "the end";
    case TokenKind::kWord:
    case TokenKind::kNumber:
    case TokenKind::kOperator:
      return EchoForError(t.text);
    case TokenKind::kQuotedName:
      return absl::StrCat("`", EchoForError(t.text), "`");
    case TokenKind::kString:
      return absl::StrCat("'", EchoForError(t.text), "'");
    case TokenKind::kEquals:
      return "=";
    case TokenKind::kOpen:
      return "(";
    case TokenKind::kClose:
      return ")";
    case TokenKind::kComma:
      return ",";
  }
  return "?";
}

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view s) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (true) {
    while (i < s.size() &&
           absl::ascii_isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
    }
    const size_t pos = i + 1;
    if (i == s.size()) {
      tokens.push_back(Token{TokenKind::kEnd, "", pos});
      return tokens;
    }
    const char c = s[i];
    if (IsWordStart(c)) {
      size_t j = i + 1;
      while (j < s.size() && IsWordChar(s[j])) ++j;
      tokens.push_back(
          Token{TokenKind::kWord, std::string(s.substr(i, j - i)), pos});
      i = j;
    } else if (c == '`') {
      std::string name;
      size_t j = i + 1;
      bool closed = false;
      while (j < s.size()) {
        if (s[j] == '`') {
          if (j + 1 < s.size() && s[j + 1] == '`') {
            name += '`';
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        name += s[j++];
      }
      if (!closed) {
        return FilterError("unterminated `name` starting at position ", pos);
      }
      if (name.empty())
        return FilterError("empty column name at position ", pos);
      tokens.push_back(Token{TokenKind::kQuotedName, std::move(name), pos});
      i = j;
    } else if (c == '\'') {
      std::string value;
      size_t j = i + 1;
      bool closed = false;
      while (j < s.size()) {
        const char d = s[j];
        if (d == '\'') {
          if (j + 1 < s.size() && s[j + 1] == '\'') {
            value += '\'';
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        if (d == '\\') {
          if (j + 1 == s.size()) break;  // unterminated
          const char e = s[j + 1];
          switch (e) {
            case '0':
              value += '\0';
              break;
            case 'b':
              value += '\b';
              break;
            case 'n':
              value += '\n';
              break;
            case 'r':
              value += '\r';
              break;
            case 't':
              value += '\t';
              break;
            case 'Z':
              value += '\x1a';
              break;
            case '%':
              value += "\\%";
              break;
            case '_':
              value += "\\_";
              break;
            default:
              value += e;
          }
          j += 2;
          continue;
        }
        value += d;
        ++j;
      }
      if (!closed) {
        return FilterError("unterminated string starting at position ", pos);
      }
      tokens.push_back(Token{TokenKind::kString, std::move(value), pos});
      i = j;
    } else if (c == '"') {
      return FilterError(
          "strings are single-quoted ('...'), found \" at position ", pos);
    } else if (IsDigit(c) ||
               (c == '-' && i + 1 < s.size() && IsDigit(s[i + 1]))) {
      size_t j = i + 1;
      while (j < s.size() && IsDigit(s[j])) ++j;
      if (j < s.size() && s[j] == '.') {
        ++j;
        const size_t fraction = j;
        while (j < s.size() && IsDigit(s[j])) ++j;
        if (j == fraction) {
          return FilterError("malformed number \"",
                             EchoForError(s.substr(i, j - i)),
                             "\" at position ", pos);
        }
      }
      if (j < s.size() && (IsWordChar(s[j]) || s[j] == '.')) {
        size_t k = j;
        while (k < s.size() && (IsWordChar(s[k]) || s[k] == '.')) ++k;
        return FilterError("malformed number \"",
                           EchoForError(s.substr(i, k - i)), "\" at position ",
                           pos);
      }
      tokens.push_back(
          Token{TokenKind::kNumber, std::string(s.substr(i, j - i)), pos});
      i = j;
    } else if (c == '=') {
      tokens.push_back(Token{TokenKind::kEquals, "=", pos});
      ++i;
    } else if (c == '<' || c == '>' || c == '!') {
      size_t j = i + 1;
      while (j < s.size() && j < i + 3 &&
             (s[j] == '<' || s[j] == '>' || s[j] == '=')) {
        ++j;
      }
      tokens.push_back(
          Token{TokenKind::kOperator, std::string(s.substr(i, j - i)), pos});
      i = j;
    } else if (c == '(') {
      tokens.push_back(Token{TokenKind::kOpen, "(", pos});
      ++i;
    } else if (c == ')') {
      tokens.push_back(Token{TokenKind::kClose, ")", pos});
      ++i;
    } else if (c == ',') {
      tokens.push_back(Token{TokenKind::kComma, ",", pos});
      ++i;
    } else {
      size_t len = Utf8SequenceLength(s.substr(i));
      if (len == 0) len = 1;
      return FilterError("unexpected character '",
                         EchoForError(s.substr(i, len)), "' at position ", pos);
    }
  }
}

// A condition as written, before the columns are known.
struct RawCondition {
  Token column;
  std::vector<Token> values;
};

bool IsWord(const Token& t, absl::string_view word) {
  return t.kind == TokenKind::kWord && absl::EqualsIgnoreCase(t.text, word);
}

absl::StatusOr<std::vector<RawCondition>> Parse(
    const std::vector<Token>& tokens) {
  std::vector<RawCondition> out;
  size_t t = 0;
  if (tokens[0].kind == TokenKind::kEnd) return out;
  auto value = [&](const Token& column) -> absl::StatusOr<Token> {
    const Token& v = tokens[t];
    if (v.kind == TokenKind::kString || v.kind == TokenKind::kNumber) {
      ++t;
      return v;
    }
    if (IsWord(v, "NULL")) {
      return FilterError("NULL at position ", v.pos,
                         " matches no row: compare \"",
                         EchoForError(column.text), "\" with values");
    }
    if (IsWord(v, "TRUE") || IsWord(v, "FALSE")) {
      return FilterError(absl::AsciiStrToUpper(v.text), " at position ", v.pos,
                         " is not a value here: write 1 or 0");
    }
    if (v.kind == TokenKind::kWord) {
      return FilterError("expected a value at position ", v.pos, ", found ",
                         Describe(v), ": quote strings ('",
                         EchoForError(v.text), "')");
    }
    return FilterError("expected a value at position ", v.pos, ", found ",
                       Describe(v));
  };
  while (true) {
    const Token& name = tokens[t];
    if (!(name.kind == TokenKind::kQuotedName ||
          (name.kind == TokenKind::kWord && !IsKeyword(name.text)))) {
      return FilterError("expected a column name at position ", name.pos,
                         ", found ", Describe(name));
    }
    RawCondition cond{name, {}};
    ++t;
    const Token& op = tokens[t];
    if (op.kind == TokenKind::kEquals) {
      ++t;
      absl::StatusOr<Token> v = value(name);
      if (!v.ok()) return v.status();
      cond.values.push_back(*std::move(v));
    } else if (IsWord(op, "IN")) {
      ++t;
      if (tokens[t].kind != TokenKind::kOpen) {
        return FilterError("expected ( after IN at position ", tokens[t].pos,
                           ", found ", Describe(tokens[t]));
      }
      ++t;
      if (tokens[t].kind == TokenKind::kClose) {
        return FilterError("empty IN list for column \"",
                           EchoForError(name.text), "\" at position ",
                           tokens[t].pos, ": name at least one value");
      }
      while (true) {
        absl::StatusOr<Token> v = value(name);
        if (!v.ok()) return v.status();
        cond.values.push_back(*std::move(v));
        if (tokens[t].kind == TokenKind::kComma) {
          ++t;
          continue;
        }
        if (tokens[t].kind == TokenKind::kClose) {
          ++t;
          break;
        }
        return FilterError("expected , or ) at position ", tokens[t].pos,
                           ", found ", Describe(tokens[t]));
      }
    } else if (IsWord(op, "NOT")) {
      return FilterError(
          "NOT at position ", op.pos,
          " is not supported: a filter selects rows with = and IN");
    } else if (op.kind == TokenKind::kOperator || IsWord(op, "LIKE") ||
               IsWord(op, "RLIKE") || IsWord(op, "REGEXP") ||
               IsWord(op, "IS") || IsWord(op, "BETWEEN")) {
      return FilterError("only = and IN compare: found ", Describe(op),
                         " at position ", op.pos);
    } else {
      return FilterError("expected = or IN after \"", EchoForError(name.text),
                         "\" at position ", op.pos, ", found ", Describe(op));
    }
    out.push_back(std::move(cond));
    const Token& next = tokens[t];
    if (next.kind == TokenKind::kEnd) return out;
    if (IsWord(next, "AND")) {
      ++t;
      continue;
    }
    if (IsWord(next, "OR") || IsWord(next, "XOR")) {
      return FilterError(absl::AsciiStrToUpper(next.text), " at position ",
                         next.pos,
                         " is not supported: conditions are joined by AND; for "
                         "alternatives of one column use IN (...)");
    }
    return FilterError("expected AND or the end at position ", next.pos,
                       ", found ", Describe(next));
  }
}

// What a column's values are, for checking and writing them.
struct ValueType {
  enum class Kind { kInteger, kDecimal, kText, kEnum, kBinary };
  Kind kind = Kind::kText;
  bool is_unsigned = false;
  int bits = 64;                     // kInteger
  int precision = 10, scale = 0;     // kDecimal: M, D
  std::optional<size_t> max_length;  // kText: characters; kBinary: bytes
  std::vector<std::string> enum_values;
};

// The "(N)" or "(M,D)" numbers of a COLUMN_TYPE.
std::vector<int> TypeArguments(absl::string_view column_type) {
  std::vector<int> out;
  const size_t open = column_type.find('(');
  const size_t close = column_type.find(')', open);
  if (open == absl::string_view::npos || close == absl::string_view::npos) {
    return out;
  }
  for (absl::string_view part :
       absl::StrSplit(column_type.substr(open + 1, close - open - 1), ',')) {
    int n = 0;
    if (absl::SimpleAtoi(part, &n)) out.push_back(n);
  }
  return out;
}

// enum('a','b''c') -> a, b'c.
std::vector<std::string> EnumValues(absl::string_view column_type) {
  std::vector<std::string> out;
  size_t i = column_type.find('(');
  if (i == absl::string_view::npos) return out;
  ++i;
  while (i < column_type.size() && column_type[i] == '\'') {
    std::string v;
    ++i;
    while (i < column_type.size()) {
      if (column_type[i] == '\'') {
        if (i + 1 < column_type.size() && column_type[i + 1] == '\'') {
          v += '\'';
          i += 2;
          continue;
        }
        ++i;
        break;
      }
      if (column_type[i] == '\\' && i + 1 < column_type.size()) {
        v += column_type[i + 1];
        i += 2;
        continue;
      }
      v += column_type[i++];
    }
    out.push_back(std::move(v));
    if (i < column_type.size() && column_type[i] == ',') ++i;
  }
  return out;
}

constexpr absl::string_view kFilterableTypes =
    "integer, decimal, char, varchar, text, enum, binary, varbinary and blob "
    "columns can be filtered";

absl::StatusOr<ValueType> TypeOf(const Column& column) {
  const std::string type = absl::AsciiStrToLower(column.data_type);
  const std::string full = absl::AsciiStrToLower(column.column_type);
  ValueType v;
  v.is_unsigned = absl::StrContains(full, "unsigned");
  auto unsupported = [&](absl::string_view why) {
    return FilterError("column \"", EchoForError(column.name), "\" is ",
                       column.column_type, why);
  };
  struct IntegerType {
    absl::string_view name;
    int bits;
  };
  for (const IntegerType& t :
       {IntegerType{"tinyint", 8}, IntegerType{"smallint", 16},
        IntegerType{"mediumint", 24}, IntegerType{"int", 32},
        IntegerType{"integer", 32}, IntegerType{"bigint", 64}}) {
    if (type != t.name) continue;
    if (absl::StrContains(full, "zerofill")) {
      return unsupported(
          ", whose text has leading zeros: filter on a column without "
          "ZEROFILL");
    }
    v.kind = ValueType::Kind::kInteger;
    v.bits = t.bits;
    return v;
  }
  if (type == "decimal" || type == "numeric") {
    v.kind = ValueType::Kind::kDecimal;
    const std::vector<int> args = TypeArguments(full);
    if (!args.empty()) v.precision = args[0];
    v.scale = args.size() > 1 ? args[1] : 0;
    return v;
  }
  if (type == "char" || type == "varchar") {
    v.kind = ValueType::Kind::kText;
    const std::vector<int> args = TypeArguments(full);
    if (!args.empty()) v.max_length = static_cast<size_t>(args[0]);
    return v;
  }
  if (type == "tinytext" || type == "text" || type == "mediumtext" ||
      type == "longtext") {
    v.kind = ValueType::Kind::kText;
    return v;
  }
  if (type == "enum") {
    v.kind = ValueType::Kind::kEnum;
    v.enum_values = EnumValues(column.column_type);
    return v;
  }
  if (type == "binary" || type == "varbinary") {
    v.kind = ValueType::Kind::kBinary;
    const std::vector<int> args = TypeArguments(full);
    if (!args.empty()) v.max_length = static_cast<size_t>(args[0]);
    return v;
  }
  if (type == "tinyblob" || type == "blob" || type == "mediumblob" ||
      type == "longblob") {
    v.kind = ValueType::Kind::kBinary;
    return v;
  }
  return unsupported(
      absl::StrCat(", which filters do not compare; ", kFilterableTypes));
}

bool IsBookkeeping(absl::string_view name) {
  for (absl::string_view b : kBookkeeping) {
    if (absl::EqualsIgnoreCase(name, b)) return true;
  }
  return false;
}

// The columns a filter may name, in table order.
std::string FilterableColumns(const std::vector<Column>& columns) {
  std::vector<std::string> names;
  for (const Column& c : columns) {
    if (!IsBookkeeping(c.name) && TypeOf(c).ok()) names.push_back(c.name);
  }
  return names.empty() ? "(none)" : absl::StrJoin(names, ", ");
}

size_t CharacterCount(absl::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string QuoteValue(absl::string_view v) {
  std::string out = "'";
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\0':
        out += "\\0";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "'";
}

std::string QuoteName(absl::string_view name) {
  bool plain = !name.empty() && IsWordStart(name[0]) && !IsKeyword(name);
  for (char c : name) plain = plain && IsWordChar(c);
  if (plain) return std::string(name);
  std::string out = "`";
  for (char c : name) {
    out += c;
    if (c == '`') out += '`';
  }
  return out + "`";
}

// The canonical text of `value` for a column of type `type`.
absl::StatusOr<std::string> Canonical(const Column& column,
                                      const ValueType& type,
                                      const Token& value) {
  const std::string what = absl::StrCat("column \"", EchoForError(column.name),
                                        "\" is ", column.column_type, ": ");
  const bool is_string = value.kind == TokenKind::kString;
  switch (type.kind) {
    case ValueType::Kind::kInteger: {
      if (is_string) {
        return FilterError(what, Describe(value),
                           " is a string; write integers without quotes");
      }
      if (absl::StrContains(value.text, '.')) {
        return FilterError(what, value.text, " is not an integer");
      }
      auto range = [&]() -> std::string {
        if (type.is_unsigned) {
          const uint64_t max = type.bits == 64
                                   ? std::numeric_limits<uint64_t>::max()
                                   : (uint64_t{1} << type.bits) - 1;
          return absl::StrCat("0 to ", max);
        }
        const int64_t max = type.bits == 64
                                ? std::numeric_limits<int64_t>::max()
                                : (int64_t{1} << (type.bits - 1)) - 1;
        return absl::StrCat(-max - 1, " to ", max);
      };
      auto out_of_range = [&]() {
        return FilterError(what, value.text, " is out of range (", range(),
                           ")");
      };
      if (type.is_unsigned) {
        uint64_t n = 0;
        if (value.text[0] == '-') {
          // "-0" (and "-000") is zero.
          if (value.text.find_first_not_of("0", 1) != std::string::npos) {
            return out_of_range();
          }
          return std::string("0");
        }
        if (!absl::SimpleAtoi(value.text, &n)) return out_of_range();
        if (type.bits < 64 && n > (uint64_t{1} << type.bits) - 1) {
          return out_of_range();
        }
        return absl::StrCat(n);
      }
      int64_t n = 0;
      if (!absl::SimpleAtoi(value.text, &n)) return out_of_range();
      if (type.bits < 64) {
        const int64_t max = (int64_t{1} << (type.bits - 1)) - 1;
        if (n > max || n < -max - 1) return out_of_range();
      }
      return absl::StrCat(n);
    }
    case ValueType::Kind::kDecimal: {
      if (is_string) {
        return FilterError(what, Describe(value),
                           " is a string; write numbers without quotes");
      }
      absl::string_view text = value.text;
      const bool negative = text[0] == '-';
      if (negative) text.remove_prefix(1);
      const size_t dot = text.find('.');
      absl::string_view whole = text.substr(0, dot);
      absl::string_view fraction =
          dot == absl::string_view::npos ? "" : text.substr(dot + 1);
      while (whole.size() > 1 && whole[0] == '0') whole.remove_prefix(1);
      while (!fraction.empty() && fraction.back() == '0') {
        fraction.remove_suffix(1);
      }
      if (fraction.size() > static_cast<size_t>(type.scale)) {
        return FilterError(what, value.text, " has more than ", type.scale,
                           " decimals");
      }
      const size_t whole_digits = whole == "0" ? 0 : whole.size();
      if (whole_digits > static_cast<size_t>(type.precision - type.scale)) {
        return FilterError(what, value.text, " has more than ",
                           type.precision - type.scale,
                           " digits before the point");
      }
      std::string digits = absl::StrCat(whole);
      if (type.scale > 0) {
        absl::StrAppend(&digits, ".", fraction,
                        std::string(type.scale - fraction.size(), '0'));
      }
      const bool zero = digits.find_first_not_of("0.") == std::string::npos;
      if (negative && !zero && type.is_unsigned) {
        return FilterError(what, value.text,
                           " is out of range (the column is unsigned)");
      }
      return negative && !zero ? absl::StrCat("-", digits) : digits;
    }
    case ValueType::Kind::kText:
    case ValueType::Kind::kBinary: {
      if (!is_string) {
        return FilterError(what, "write ", value.text, " as a string ('",
                           value.text, "')");
      }
      if (type.kind == ValueType::Kind::kText && !IsValidUtf8(value.text)) {
        return FilterError(what, Describe(value), " is not valid UTF-8");
      }
      const bool text = type.kind == ValueType::Kind::kText;
      const size_t length =
          text ? CharacterCount(value.text) : value.text.size();
      if (type.max_length.has_value() && length > *type.max_length) {
        return FilterError(what, Describe(value), " is ", length,
                           text ? " characters" : " bytes", "; at most ",
                           *type.max_length);
      }
      return value.text;
    }
    case ValueType::Kind::kEnum: {
      if (!is_string) {
        return FilterError(what, "write ", value.text, " as a string ('",
                           value.text, "')");
      }
      for (const std::string& v : type.enum_values) {
        if (v == value.text) return v;
      }
      for (const std::string& v : type.enum_values) {
        if (absl::EqualsIgnoreCase(v, value.text)) return v;
      }
      return FilterError(what, Describe(value), " is not one of its values");
    }
  }
  return FilterError(what, "unknown type");
}

}  // namespace

std::string GroupFilter::ToString() const {
  std::vector<std::string> parts;
  for (const FilterCondition& c : conditions) {
    std::vector<std::string> values;
    for (const std::string& v : c.values) {
      values.push_back(c.quoted ? QuoteValue(v) : v);
    }
    if (values.size() == 1) {
      parts.push_back(absl::StrCat(QuoteName(c.column), " = ", values[0]));
    } else {
      parts.push_back(absl::StrCat(QuoteName(c.column), " IN (",
                                   absl::StrJoin(values, ", "), ")"));
    }
  }
  return absl::StrJoin(parts, " AND ");
}

absl::StatusOr<GroupFilter> ParseGroupFilter(
    absl::string_view text, const std::vector<Column>& columns) {
  if (text.size() > kMaxFilterLength) {
    return FilterError("the filter is ", text.size(), " bytes; at most ",
                       kMaxFilterLength);
  }
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text);
  if (!tokens.ok()) return tokens.status();
  absl::StatusOr<std::vector<RawCondition>> raw = Parse(*tokens);
  if (!raw.ok()) return raw.status();
  GroupFilter filter;
  for (const RawCondition& r : *raw) {
    const Column* column = nullptr;
    for (const Column& c : columns) {
      if (absl::EqualsIgnoreCase(c.name, r.column.text)) {
        column = &c;
        break;
      }
    }
    if (column == nullptr) {
      return FilterError("unknown column \"", EchoForError(r.column.text),
                         "\"; columns: ", FilterableColumns(columns));
    }
    if (IsBookkeeping(column->name)) {
      return FilterError("column \"", EchoForError(column->name),
                         "\" is msgq's bookkeeping, not the application's; "
                         "columns: ",
                         FilterableColumns(columns));
    }
    for (const FilterCondition& seen : filter.conditions) {
      if (seen.column == column->name) {
        return FilterError("column \"", EchoForError(column->name),
                           "\" appears twice; put its values in one IN list");
      }
    }
    absl::StatusOr<ValueType> type = TypeOf(*column);
    if (!type.ok()) return type.status();
    FilterCondition cond;
    cond.column = column->name;
    cond.quoted = type->kind != ValueType::Kind::kInteger &&
                  type->kind != ValueType::Kind::kDecimal;
    for (const Token& v : r.values) {
      absl::StatusOr<std::string> canonical = Canonical(*column, *type, v);
      if (!canonical.ok()) return canonical.status();
      if (std::find(cond.values.begin(), cond.values.end(), *canonical) ==
          cond.values.end()) {
        cond.values.push_back(*std::move(canonical));
      }
    }
    filter.conditions.push_back(std::move(cond));
  }
  return filter;
}

absl::StatusOr<RowFilter> RowFilter::Bind(const GroupFilter& filter,
                                          const std::vector<Column>& streamed) {
  RowFilter bound;
  for (const FilterCondition& c : filter.conditions) {
    auto it = std::find_if(
        streamed.begin(), streamed.end(), [&](const Column& column) {
          return absl::EqualsIgnoreCase(column.name, c.column);
        });
    if (it == streamed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "filter: column \"", c.column, "\" is not streamed by the table"));
    }
    bound.conditions_.push_back(
        Bound{static_cast<size_t>(it - streamed.begin()), c.values});
  }
  return bound;
}

bool RowFilter::Matches(const std::vector<int64_t>& lengths,
                        absl::string_view values) const {
  for (const Bound& c : conditions_) {
    if (c.index >= lengths.size() || lengths[c.index] < 0) return false;
    size_t offset = 0;
    for (size_t i = 0; i < c.index; ++i) {
      if (lengths[i] > 0) offset += static_cast<size_t>(lengths[i]);
    }
    const size_t length = static_cast<size_t>(lengths[c.index]);
    if (offset + length > values.size()) return false;
    const absl::string_view text = values.substr(offset, length);
    if (std::find(c.values.begin(), c.values.end(), text) == c.values.end()) {
      return false;
    }
  }
  return true;
}

}  // namespace msgq
