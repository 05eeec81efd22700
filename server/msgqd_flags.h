// msgqd's own flags (--databases, --listen, --leases, ...), read into
// MsgqdOptions. The flags of the parts live with them: MySQL
// (server/mysql_flags.h), TLS and tokens (server/security_flags.h), the
// HTTP port (server/http/http_flags.h), the MySQL-protocol port
// (server/mysql_protocol/mysql_protocol_flags.h).
//
// Not thread-safe: call from main after absl::ParseCommandLine, before
// starting threads.
#ifndef MSGQ_SERVER_MSGQD_FLAGS_H_
#define MSGQ_SERVER_MSGQD_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "engine/engine.h"

namespace msgq {

struct MsgqdOptions {
  // Everything the engine needs. engine.instance_id is --instance_id, empty
  // when not given: msgqd then names itself host:port once its gRPC port
  // is bound (MsgqdServer, DefaultInstanceId).
  Engine::Options engine;
  std::string listen;       // --listen: gRPC, HOST:PORT (port 0: any)
  std::string http_listen;  // --http_listen; empty: no HTTP port
  absl::Duration shutdown_timeout = absl::Seconds(10);
};

// --log_format and --log_level. INVALID_ARGUMENT naming the flag.
absl::StatusOr<LogOptions> LogOptionsFromFlags();

// Every flag of this file, and the MySQL flags (MysqlOptionsFromFlags).
// INVALID_ARGUMENT with a message naming the flag when one is out of range
// or malformed (msgqd prints it and exits 2).
absl::StatusOr<MsgqdOptions> MsgqdOptionsFromFlags();

}  // namespace msgq

#endif  // MSGQ_SERVER_MSGQD_FLAGS_H_
