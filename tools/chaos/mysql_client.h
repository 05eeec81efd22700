// MysqlClient: one client connection to msgqd's MySQL-protocol port
// (Connector/C, libmariadb), logged in with a bearer token as the password
// over TLS, as the soak's normal and hostile MySQL clients use it. Connect,
// reads and writes are bounded by Login::timeout; a connection registered
// with a SocketRegistry is shut down by its ShutdownAll.
//
// Errors are UNAVAILABLE with "ERR <code>: <text>" (the server's error or
// Connector/C's: 2002/2003 cannot connect, 2013 lost connection, 2026 TLS),
// digits in the text replaced by N so that outcomes group (MysqlOutcome).
//
// Not thread-safe: one thread uses a client at a time. MysqlLibraryInit()
// must run once before any thread connects.
#ifndef MSGQ_TOOLS_CHAOS_MYSQL_CLIENT_H_
#define MSGQ_TOOLS_CHAOS_MYSQL_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/chaos/net.h"

typedef struct st_mysql MYSQL;

namespace msgq::chaos {

void MysqlLibraryInit();

// "ok" for OK, else the status message ("ERR 1040: Too many connections").
std::string MysqlOutcome(const absl::Status& status);

class MysqlClient {
 public:
  struct Login {
    int port = 0;  // on 127.0.0.1
    std::string user;
    std::string password;  // the bearer token
    std::string database;  // may be empty
    std::string ca_file;   // TLS trusting this CA; empty: no TLS
    // Each of connect, read and write (whole seconds, at least 1).
    absl::Duration timeout = absl::Seconds(10);
  };

  static absl::StatusOr<std::unique_ptr<MysqlClient>> Connect(
      const Login& login, SocketRegistry* registry);
  ~MysqlClient();

  // Runs `sql` and reads its whole result, if any; returns its row count.
  absl::StatusOr<int64_t> Query(absl::string_view sql);
  // The connection id from the server's greeting.
  uint32_t id() const;
  int fd() const;
  MYSQL* get() const { return mysql_; }
  // The error of the last failed call on get(), as Query returns it.
  absl::Status LastError() const;

 private:
  MysqlClient(MYSQL* mysql, SocketRegistry* registry)
      : mysql_(mysql), registry_(registry) {}
  MYSQL* const mysql_;
  SocketRegistry* const registry_;
  int registered_fd_ = -1;
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_MYSQL_CLIENT_H_
