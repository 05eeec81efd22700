// Recognizes the few statements msgq's MySQL-protocol port answers:
//
//   stream * from [keyspace.]table   (case-insensitive keywords, optional
//                                     backticks, optional trailing ';')
//   use db
//   set ...                          (any SET: answered OK, ignored)
//   select @@version_comment [limit N] / select @@version / select version()
//   select database()
//   select <integer>                 (e.g. "select 1", a liveness check)
//   kill [query|connection] <id>     (the mariadb client's Ctrl-C)
//
// Everything else is kUnsupported (answered ERR 1064). Pure function.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_STATEMENT_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_STATEMENT_H_

#include <cstdint>
#include <string>

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
  std::string keyspace;          // kStream (may be empty), kUse
  std::string table;             // kStream
  std::string literal;           // kSelectInteger: the integer as written
  uint32_t kill_id = 0;          // kKill
  bool kill_connection = false;  // kKill: CONNECTION (the default)
};

Statement RecognizeStatement(absl::string_view sql);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_STATEMENT_H_
