#include "server/mysql_flags.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

ABSL_FLAG(std::string, mysql_host, "127.0.0.1",
          "MySQL host (TCP), or several as host[:port],host[:port]: the "
          "servers of one replication topology, of which msgqd serves the "
          "writable one (@@read_only=0), following it when it moves; or the "
          "nodes of one Galera cluster, of which it serves a synced node of "
          "the primary component (docs/galera.md)");
ABSL_FLAG(int, mysql_port, 3306,
          "MySQL port (TCP), for --mysql_host entries without one");
ABSL_FLAG(std::string, mysql_socket, "",
          "MySQL Unix socket; when set, used instead of host/port");
ABSL_FLAG(std::string, mysql_user, "root", "MySQL user");
ABSL_FLAG(std::string, mysql_password, "",
          "MySQL password; shows in ps until msgqd hides it at start: "
          "prefer --mysql_password_file or MSGQ_MYSQL_PASSWORD");
ABSL_FLAG(std::string, mysql_password_file, "",
          "File whose first line is the MySQL password");
ABSL_FLAG(std::string, mysql_ssl_mode, "disabled",
          "TLS to MySQL: disabled, required (encrypted, server not "
          "verified) or verify_identity (encrypted, the server's "
          "certificate checked against --mysql_ssl_ca and the host name)");
ABSL_FLAG(std::string, mysql_ssl_ca, "",
          "CA certificate file (PEM) for --mysql_ssl_mode=verify_identity");
ABSL_FLAG(bool, mysql_noblob_writes, false,
          "msgqd's own writes (acks, postpones, purges) put a BLOB or TEXT "
          "column, such as the payload, into the binlog only where they "
          "change it (session binlog_row_image=NOBLOB): less binlog and "
          "fewer page reads per message for large payloads; other binlog "
          "readers then see those writes without the payload");

namespace msgq {
namespace {

absl::StatusOr<std::string> ReadPasswordFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mysql_password_file: cannot read '", path,
                     "': ", std::strerror(errno)));
  }
  std::string line;
  std::getline(in, line);
  absl::string_view password = absl::StripSuffix(line, "\r");
  if (password.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mysql_password_file: '", path, "' has an empty first line"));
  }
  return std::string(password);
}

}  // namespace

absl::StatusOr<MysqlOptions> MysqlOptionsFromFlags() {
  MysqlOptions mysql;
  mysql.socket = absl::GetFlag(FLAGS_mysql_socket);
  absl::StatusOr<std::vector<MysqlEndpoint>> endpoints = ParseMysqlEndpoints(
      absl::GetFlag(FLAGS_mysql_host), absl::GetFlag(FLAGS_mysql_port));
  if (!endpoints.ok()) return endpoints.status();
  mysql.host = endpoints->front().host;
  mysql.port = endpoints->front().port;
  if (endpoints->size() > 1 && mysql.socket.empty()) {
    mysql.primary = std::make_shared<MysqlPrimary>(*std::move(endpoints));
  }
  mysql.user = absl::GetFlag(FLAGS_mysql_user);

  const std::string flag = absl::GetFlag(FLAGS_mysql_password);
  const std::string file = absl::GetFlag(FLAGS_mysql_password_file);
  const char* env = std::getenv("MSGQ_MYSQL_PASSWORD");
  if (!flag.empty() && !file.empty()) {
    return absl::InvalidArgumentError(
        "give --mysql_password_file or --mysql_password, not both");
  }
  if (!file.empty()) {
    absl::StatusOr<std::string> password = ReadPasswordFile(file);
    if (!password.ok()) return password.status();
    mysql.password = *std::move(password);
  } else if (!flag.empty()) {
    mysql.password = flag;
  } else if (env != nullptr) {
    mysql.password = env;  // fills in what no flag gave
  }

  const std::string mode = absl::GetFlag(FLAGS_mysql_ssl_mode);
  if (mode == "disabled") {
    mysql.tls = MysqlTls::kDisabled;
  } else if (mode == "required") {
    mysql.tls = MysqlTls::kRequired;
  } else if (mode == "verify_identity") {
    mysql.tls = MysqlTls::kVerifyIdentity;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--mysql_ssl_mode '", mode,
                     "': use disabled, required or verify_identity"));
  }
  mysql.tls_ca = absl::GetFlag(FLAGS_mysql_ssl_ca);
  mysql.binlog_noblob = absl::GetFlag(FLAGS_mysql_noblob_writes);
  if (mysql.tls == MysqlTls::kVerifyIdentity && mysql.tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "--mysql_ssl_mode=verify_identity needs --mysql_ssl_ca");
  }
  return mysql;
}

void HideMysqlPasswordInArgv(int argc, char** argv) {
  bool next_is_value = false;
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    if (next_is_value) {
      std::memset(arg, 'x', std::strlen(arg));
      next_is_value = false;
      continue;
    }
    for (const char* prefix : {"--mysql_password", "-mysql_password"}) {
      const size_t n = std::strlen(prefix);
      if (std::strncmp(arg, prefix, n) != 0) continue;
      if (arg[n] == '=') {
        std::memset(arg + n + 1, 'x', std::strlen(arg + n + 1));
      } else if (arg[n] == '\0') {
        next_is_value = true;  // "--mysql_password VALUE"
      }
      break;
    }
  }
}

}  // namespace msgq
