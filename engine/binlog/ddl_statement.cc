#include "engine/binlog/ddl_statement.h"

#include <cstddef>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace msgq {
namespace {

struct Token {
  std::string text;
  bool quoted = false;  // a quoted identifier: never a keyword
};

bool IsWordChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '$' || (static_cast<unsigned char>(c) & 0x80) != 0;
}

// Splits `sql` into identifiers/keywords and single punctuation characters,
// dropping whitespace and comments. nullopt on an unterminated quote.
std::optional<std::vector<Token>> Tokenize(absl::string_view sql) {
  std::vector<Token> tokens;
  size_t i = 0;
  const size_t n = sql.size();
  while (i < n) {
    const char c = sql[i];
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#' ||
               (c == '-' && i + 2 < n + 1 && sql.substr(i, 2) == "--" &&
                (i + 2 == n || absl::ascii_isspace(
                                   static_cast<unsigned char>(sql[i + 2]))))) {
      while (i < n && sql[i] != '\n') ++i;
    } else if (sql.substr(i, 2) == "/*") {
      // Executable comments (/*!50100 ... */, /*M!100500 ... */) are code:
      // drop only the marker; their closing */ is dropped below.
      if (sql.substr(i, 3) == "/*!" || sql.substr(i, 4) == "/*M!") {
        i += sql[i + 2] == '!' ? 3 : 4;
        while (i < n && absl::ascii_isdigit(static_cast<unsigned char>(sql[i])))
          ++i;
      } else {
        const size_t end = sql.find("*/", i + 2);
        i = end == absl::string_view::npos ? n : end + 2;
      }
    } else if (sql.substr(i, 2) == "*/") {
      i += 2;
    } else if (c == '`' || c == '"') {
      Token t;
      t.quoted = true;
      ++i;
      while (true) {
        if (i >= n) return std::nullopt;
        if (sql[i] == c) {
          if (i + 1 < n && sql[i + 1] == c) {
            t.text.push_back(c);
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        t.text.push_back(sql[i++]);
      }
      tokens.push_back(std::move(t));
    } else if (IsWordChar(c)) {
      Token t;
      while (i < n && IsWordChar(sql[i])) t.text.push_back(sql[i++]);
      tokens.push_back(std::move(t));
    } else {
      tokens.push_back(Token{std::string(1, c), false});
      ++i;
    }
  }
  return tokens;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, absl::string_view default_db)
      : tokens_(std::move(tokens)), default_db_(default_db) {}

  bool Keyword(absl::string_view word) {
    if (pos_ < tokens_.size() && !tokens_[pos_].quoted &&
        absl::EqualsIgnoreCase(tokens_[pos_].text, word)) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Punct(char c) {
    if (pos_ < tokens_.size() && !tokens_[pos_].quoted &&
        tokens_[pos_].text.size() == 1 && tokens_[pos_].text[0] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Sequence(std::initializer_list<absl::string_view> words) {
    const size_t start = pos_;
    for (absl::string_view w : words) {
      if (!Keyword(w)) {
        pos_ = start;
        return false;
      }
    }
    return true;
  }
  // [db.]table
  bool Name(TableName* out) {
    std::string first;
    if (!Identifier(&first)) return false;
    if (Punct('.')) {
      std::string second;
      if (!Identifier(&second)) return false;
      *out = TableName{std::move(first), std::move(second)};
    } else {
      *out = TableName{std::string(default_db_), std::move(first)};
    }
    return true;
  }
  // ADD, DROP, REORGANIZE, TRUNCATE, COALESCE, ANALYZE, CHECK, OPTIMIZE,
  // REBUILD or REPAIR followed by PARTITION: the grammar allows these only
  // as the whole of an ALTER (never in a comma list with other changes).
  bool PartitionMaintenance() {
    for (absl::string_view verb :
         {"ADD", "DROP", "REORGANIZE", "TRUNCATE", "COALESCE", "ANALYZE",
          "CHECK", "OPTIMIZE", "REBUILD", "REPAIR"}) {
      if (Sequence({verb, "PARTITION"})) return true;
    }
    return false;
  }
  // WAIT n | NOWAIT
  void SkipWait() {
    if (Keyword("NOWAIT")) return;
    if (Keyword("WAIT") && pos_ < tokens_.size()) ++pos_;
  }

 private:
  bool Identifier(std::string* out) {
    if (pos_ >= tokens_.size()) return false;
    const Token& t = tokens_[pos_];
    if (!t.quoted && (t.text.empty() || !IsWordChar(t.text[0]))) return false;
    *out = t.text;
    ++pos_;
    return true;
  }

  const std::vector<Token> tokens_;
  const absl::string_view default_db_;
  size_t pos_ = 0;
};

}  // namespace

DdlStatement ParseDdl(absl::string_view default_db, absl::string_view sql) {
  std::optional<std::vector<Token>> tokens = Tokenize(sql);
  if (!tokens.has_value()) return {};
  Parser p(*std::move(tokens), default_db);
  DdlStatement out;
  TableName name;
  if (p.Keyword("TRUNCATE")) {
    p.Keyword("TABLE");
    if (!p.Name(&name)) return {};
    out.kind = DdlStatement::kTruncate;
    out.tables.push_back(std::move(name));
  } else if (p.Keyword("DROP")) {
    if (!p.Keyword("TABLE") && !p.Keyword("TABLES")) return {};
    p.Sequence({"IF", "EXISTS"});
    do {
      if (!p.Name(&name)) return {};
      out.tables.push_back(std::move(name));
    } while (p.Punct(','));
    out.kind = DdlStatement::kDrop;
  } else if (p.Keyword("ALTER")) {
    p.Keyword("ONLINE");
    p.Keyword("IGNORE");
    if (!p.Keyword("TABLE")) return {};
    p.Sequence({"IF", "EXISTS"});
    if (!p.Name(&name)) return {};
    p.SkipWait();
    out.kind = p.PartitionMaintenance() ? DdlStatement::kPartitionMaintenance
                                        : DdlStatement::kAlter;
    out.tables.push_back(std::move(name));
  } else if (p.Keyword("RENAME")) {
    if (!p.Keyword("TABLE") && !p.Keyword("TABLES")) return {};
    p.Sequence({"IF", "EXISTS"});
    do {
      TableName to;
      if (!p.Name(&name)) return {};
      p.SkipWait();
      if (!p.Keyword("TO") || !p.Name(&to)) return {};
      out.tables.push_back(std::move(name));
      out.tables.push_back(std::move(to));
    } while (p.Punct(','));
    out.kind = DdlStatement::kRename;
  } else if (p.Sequence({"CREATE", "OR", "REPLACE"})) {
    if (!p.Keyword("TABLE")) return {};  // TEMPORARY, VIEW, ...
    p.Sequence({"IF", "NOT", "EXISTS"});
    if (!p.Name(&name)) return {};
    out.kind = DdlStatement::kCreateOrReplace;
    out.tables.push_back(std::move(name));
  } else if (p.Keyword("CREATE")) {
    if (!p.Keyword("TABLE")) return {};  // TEMPORARY, VIEW, INDEX, ...
    p.Sequence({"IF", "NOT", "EXISTS"});
    if (!p.Name(&name)) return {};
    out.kind = DdlStatement::kCreate;
    out.tables.push_back(std::move(name));
  }
  return out;
}

}  // namespace msgq
