// Recognizes the few statements msgq's MySQL-protocol port answers:
//
//   stream * from [keyspace.]table [group NAME]
//                                    (case-insensitive keywords, optional
//                                     backticks, optional trailing ';';
//                                     a group name with '-' in backticks)
//   use db
//   set ...                          (any SET: answered OK, ignored)
//   select @@version_comment [limit N] / select @@version / select version()
//   select database()
//   select <integer>                 (e.g. "select 1", a liveness check)
//   kill [query|connection] <id>     (the mariadb client's Ctrl-C)
//
// Everything else is kUnsupported (answered ERR 1064); a statement that
// starts with `stream` but is not of that form also says in `expected`
// what was expected where it went wrong.
//
// Cost: the statement is split into at most kMaxStatementTokens tokens and
// the split stops there, so a statement of any length costs a bounded
// number of small allocations (a 1 MiB `((((...` builds 16 one-character
// tokens, not a million). Every statement served has fewer tokens; a SET is
// recognized by its first word whatever its length; anything else longer
// is kUnsupported. (The connection also refuses a statement over
// --mysql_protocol_max_query_bytes from its packet header, before reading
// it: command.h.)
//
// Pure functions: thread-safe.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_STATEMENT_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_STATEMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace msgq::mysql_protocol {

struct Statement {
  enum class Kind {
    kEmpty,
    kStream,
    kUse,
    kSet,
    kSelectVersionComment,
    kSelectVersion,
    kSelectDatabase,
    kSelectInteger,
    kKill,
    kUnsupported,
  };
  Kind kind = Kind::kUnsupported;
  std::string keyspace;  // kStream (may be empty), kUse
  std::string table;     // kStream
  std::string group;     // kStream: "" = the default group
  // kUnsupported of a `stream` statement: what was expected, e.g. "a group
  // name after 'group'"; empty otherwise.
  std::string expected;
  std::string literal;           // kSelectInteger: the integer as written
  uint32_t kill_id = 0;          // kKill
  bool kill_connection = false;  // kKill: CONNECTION (the default)
};

Statement RecognizeStatement(absl::string_view sql);

// The most tokens TokenizeStatement builds.
inline constexpr size_t kMaxStatementTokens = 16;

struct StatementToken {
  std::string text;     // identifier without backticks; word as written
  bool quoted = false;  // `...` (a doubled backtick inside is one backtick)
};

struct StatementTokens {
  // Words, `quoted identifiers` and single punctuation characters, in
  // order; at most kMaxStatementTokens.
  std::vector<StatementToken> tokens;
  // More tokens follow the last one (the rest was not split).
  bool truncated = false;
  // False on an unterminated backtick among the tokens split.
  bool valid = true;
};

// The first tokens of `sql` (see above); RecognizeStatement's first step.
StatementTokens TokenizeStatement(absl::string_view sql);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_STATEMENT_H_
