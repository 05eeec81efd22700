// msgqd's MySQL flags (--mysql_*), read into MysqlOptions.
//
// The password comes from --mysql_password_file (the file's first line) or
// --mysql_password (not both), else from the MSGQ_MYSQL_PASSWORD
// environment variable. --mysql_password is overwritten in argv at start so
// `ps` and /proc/PID/cmdline stop showing it (prefer the file or the
// variable: the flag is visible until msgqd has parsed it).
// TLS to MySQL: --mysql_ssl_mode=disabled|required|verify_identity with
// --mysql_ssl_ca for the last.
//
// Not thread-safe: call from main before starting threads.
#ifndef MSGQ_SERVER_MYSQL_FLAGS_H_
#define MSGQ_SERVER_MYSQL_FLAGS_H_

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

// The MySQL options the flags describe. INVALID_ARGUMENT naming the flag
// for a bad --mysql_host list, an unreadable or empty password file, both
// password flags at once, an unknown --mysql_ssl_mode, or
// verify_identity without --mysql_ssl_ca.
absl::StatusOr<MysqlOptions> MysqlOptionsFromFlags();

// Overwrites the value of every --mysql_password=... argument in place
// with 'x's (call after absl::ParseCommandLine).
void HideMysqlPasswordInArgv(int argc, char** argv);

}  // namespace msgq

#endif  // MSGQ_SERVER_MYSQL_FLAGS_H_
