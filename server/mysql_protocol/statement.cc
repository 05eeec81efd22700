#include "server/mysql_protocol/statement.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace msgq::mysql_protocol {
namespace {

using Token = StatementToken;

bool IsWordChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '$' || c == '@' || static_cast<unsigned char>(c) >= 0x80;
}

bool Is(const std::vector<Token>& t, size_t i, absl::string_view word) {
  return i < t.size() && !t[i].quoted &&
         absl::EqualsIgnoreCase(t[i].text, word);
}

bool IsIdentifier(const Token& t) {
  if (t.quoted) return !t.text.empty();
  return !t.text.empty() && t.text[0] != '@' && IsWordChar(t.text[0]);
}

bool IsInteger(const Token& t) {
  if (t.quoted || t.text.empty() || t.text.size() > 18) return false;
  for (char c : t.text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// `select X [limit N]` where X is tokens [1, end).
bool LimitTail(const std::vector<Token>& t, size_t i) {
  if (i == t.size()) return true;
  return i + 2 == t.size() && Is(t, i, "limit") && IsInteger(t[i + 1]);
}

// `stream * from [keyspace.]table [group NAME]`, tokens without the
// trailing ';'s.
Statement RecognizeStream(const std::vector<Token>& t) {
  Statement out;
  auto expect = [&out](absl::string_view what) {
    out.expected = std::string(what);
    return out;
  };
  if (!Is(t, 1, "*")) return expect("'*' after 'stream'");
  if (!Is(t, 2, "from")) return expect("'from' after 'stream *'");
  if (t.size() < 4 || !IsIdentifier(t[3])) {
    return expect("a table name after 'from'");
  }
  size_t i = 4;
  std::string keyspace;
  std::string table = t[3].text;
  if (Is(t, 4, ".")) {
    if (t.size() < 6 || !IsIdentifier(t[5])) {
      return expect("a table name after 'keyspace.'");
    }
    keyspace = t[3].text;
    table = t[5].text;
    i = 6;
  }
  std::string group;
  if (i < t.size()) {
    if (!Is(t, i, "group")) {
      return expect("'group NAME' or the end of the statement after the table");
    }
    if (i + 1 >= t.size() || !IsIdentifier(t[i + 1])) {
      return expect("a group name after 'group'");
    }
    if (i + 2 != t.size()) {
      return expect(
          "the end of the statement after the group name (a name with '-' "
          "goes in backticks)");
    }
    group = t[i + 1].text;
  }
  out.kind = Statement::Kind::kStream;
  out.keyspace = std::move(keyspace);
  out.table = std::move(table);
  out.group = std::move(group);
  return out;
}

}  // namespace

StatementTokens TokenizeStatement(absl::string_view sql) {
  StatementTokens out;
  size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (out.tokens.size() == kMaxStatementTokens) {
      out.truncated = true;
      return out;
    }
    Token t;
    if (c == '`') {
      t.quoted = true;
      ++i;
      while (true) {
        if (i >= sql.size()) {
          out.valid = false;
          return out;
        }
        if (sql[i] == '`') {
          if (i + 1 < sql.size() && sql[i + 1] == '`') {
            t.text.push_back('`');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        t.text.push_back(sql[i++]);
      }
    } else if (IsWordChar(c)) {
      const size_t start = i;
      while (i < sql.size() && IsWordChar(sql[i])) ++i;
      t.text.assign(sql.data() + start, i - start);
    } else {
      t.text.assign(1, c);
      ++i;
    }
    out.tokens.push_back(std::move(t));
  }
  return out;
}

Statement RecognizeStatement(absl::string_view sql) {
  using Kind = Statement::Kind;
  Statement out;
  StatementTokens split = TokenizeStatement(sql);
  if (!split.valid) return out;
  std::vector<Token>& t = split.tokens;
  // Any SET is answered OK: the client's session settings do not matter.
  if (Is(t, 0, "set")) {
    out.kind = Kind::kSet;
    return out;
  }
  // Longer than any statement served.
  if (split.truncated) return out;
  while (!t.empty() && !t.back().quoted && t.back().text == ";") t.pop_back();
  if (t.empty()) {
    out.kind = Kind::kEmpty;
    return out;
  }
  if (Is(t, 0, "stream")) return RecognizeStream(t);
  if (Is(t, 0, "use") && t.size() == 2 && IsIdentifier(t[1])) {
    out.kind = Kind::kUse;
    out.keyspace = t[1].text;
    return out;
  }
  if (Is(t, 0, "kill") && t.size() >= 2) {
    size_t i = 1;
    out.kill_connection = true;
    if (Is(t, 1, "query") || Is(t, 1, "connection")) {
      out.kill_connection = Is(t, 1, "connection");
      i = 2;
    }
    uint32_t id = 0;
    if (i + 1 == t.size() && IsInteger(t[i]) &&
        absl::SimpleAtoi(t[i].text, &id)) {
      out.kind = Kind::kKill;
      out.kill_id = id;
    }
    return out;
  }
  if (!Is(t, 0, "select") || t.size() < 2) return out;
  if (Is(t, 1, "@@version_comment") && LimitTail(t, 2)) {
    out.kind = Kind::kSelectVersionComment;
  } else if (Is(t, 1, "@@version") && LimitTail(t, 2)) {
    out.kind = Kind::kSelectVersion;
  } else if (Is(t, 1, "version") && Is(t, 2, "(") && Is(t, 3, ")") &&
             LimitTail(t, 4)) {
    out.kind = Kind::kSelectVersion;
  } else if (Is(t, 1, "database") && Is(t, 2, "(") && Is(t, 3, ")") &&
             LimitTail(t, 4)) {
    out.kind = Kind::kSelectDatabase;
  } else if (IsInteger(t[1]) && LimitTail(t, 2)) {
    out.kind = Kind::kSelectInteger;
    out.literal = t[1].text;
  }
  return out;
}

}  // namespace msgq::mysql_protocol
