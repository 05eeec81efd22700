#include "server/mysql_protocol/mysql_protocol_flags.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "server/mysql_protocol/packet.h"

ABSL_FLAG(std::string, mysql_protocol_listen, "127.0.0.1:15306",
          "MySQL client/server protocol address where any MySQL client "
          "receives messages with 'stream * from TABLE' (port 0 picks a free "
          "port; empty disables)");
ABSL_FLAG(int, mysql_protocol_max_connections, 64,
          "MySQL-protocol clients served at once (one thread each); one more "
          "gets error 1040 'Too many connections'");
ABSL_FLAG(std::string, mysql_protocol_user, "",
          "The user MySQL-protocol clients must log in as (with the password "
          "of --mysql_protocol_password_file); empty: any user with an empty "
          "password, allowed only on a loopback --mysql_protocol_listen");
ABSL_FLAG(std::string, mysql_protocol_password_file, "",
          "File whose first line is --mysql_protocol_user's password");
ABSL_FLAG(bool, mysql_protocol_require_tls, true,
          "With TLS on (--tls_cert/--tls_key, the gRPC port's files), "
          "MySQL-protocol clients must use TLS (error 3159 otherwise); "
          "false also lets clients in without it (tokens then only from "
          "loopback)");
ABSL_FLAG(absl::Duration, mysql_protocol_handshake_timeout, absl::Seconds(10),
          "A MySQL-protocol client that has not logged in by then (TLS "
          "handshake included) is disconnected");
ABSL_FLAG(int, mysql_protocol_max_connections_per_principal, 16,
          "Logged-in MySQL-protocol connections of one principal (token or "
          "client-certificate logins), streaming or not; one more gets error "
          "1203 (max_user_connections). 0: only "
          "--mysql_protocol_max_connections");
ABSL_FLAG(int, mysql_protocol_max_handshakes_per_address, 16,
          "MySQL-protocol connections from one client address (IPv6: one "
          "/64) that have not logged in yet; one more from that address gets "
          "error 1040. 0: only --mysql_protocol_max_connections");
ABSL_FLAG(int, mysql_protocol_max_handshakes, 32,
          "MySQL-protocol connections not logged in yet, of all addresses "
          "(below --mysql_protocol_max_connections: the rest is kept for "
          "logged-in clients). When it or --mysql_protocol_max_connections "
          "is reached, a new client displaces the oldest connection not "
          "logged in of the address with the most of them, if that address "
          "has more than the client's; else it gets error 1040. 0: only "
          "--mysql_protocol_max_connections");
ABSL_FLAG(absl::Duration, mysql_protocol_idle_timeout, absl::Minutes(10),
          "A logged-in MySQL-protocol connection that is not streaming and "
          "sends no command for this long gets error 4031 and is closed");
ABSL_FLAG(int, mysql_protocol_max_query_bytes, 16384,
          "Longest statement a MySQL-protocol client may send (and longest "
          "login packet); a longer one gets error 1153 from its header, "
          "before it is read, and the connection is closed");

namespace msgq::mysql_protocol {

absl::StatusOr<MysqlProtocolServer::Options> OptionsFromFlags() {
  MysqlProtocolServer::Options options;
  options.listen = absl::GetFlag(FLAGS_mysql_protocol_listen);
  options.max_connections = absl::GetFlag(FLAGS_mysql_protocol_max_connections);
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_max_connections must be at least 1");
  }
  options.max_connections_per_principal =
      absl::GetFlag(FLAGS_mysql_protocol_max_connections_per_principal);
  if (options.max_connections_per_principal < 0) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_max_connections_per_principal must be at least 0");
  }
  options.max_handshakes_per_address =
      absl::GetFlag(FLAGS_mysql_protocol_max_handshakes_per_address);
  if (options.max_handshakes_per_address < 0) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_max_handshakes_per_address must be at least 0");
  }
  options.max_handshakes = absl::GetFlag(FLAGS_mysql_protocol_max_handshakes);
  if (options.max_handshakes < 0) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_max_handshakes must be at least 0");
  }
  options.connection.handshake_timeout =
      absl::GetFlag(FLAGS_mysql_protocol_handshake_timeout);
  if (options.connection.handshake_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_handshake_timeout must be positive");
  }
  options.connection.idle_timeout =
      absl::GetFlag(FLAGS_mysql_protocol_idle_timeout);
  if (options.connection.idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_idle_timeout must be positive");
  }
  const int max_query = absl::GetFlag(FLAGS_mysql_protocol_max_query_bytes);
  // Below 1 KiB a client's login packet (user, database, connection
  // attributes) may not fit; 16 MiB is the protocol's packet size.
  if (max_query < 1024 ||
      static_cast<size_t>(max_query) >= kMaxPayloadPerPacket) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_max_query_bytes must be at least 1024 and below "
        "16 MiB");
  }
  options.connection.max_query_bytes = static_cast<size_t>(max_query);
  options.connection.user = absl::GetFlag(FLAGS_mysql_protocol_user);
  const std::string file = absl::GetFlag(FLAGS_mysql_protocol_password_file);
  if (options.connection.user.empty() != file.empty()) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_user and --mysql_protocol_password_file go "
        "together");
  }
  if (!file.empty()) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mysql_protocol_password_file: cannot read '", file, "'"));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mysql_protocol_password_file: '", file,
                       "' has an empty first line"));
    }
    options.connection.password = std::move(line);
  }
  return options;
}

absl::StatusOr<std::unique_ptr<MysqlProtocolServer>> StartFromFlags(
    Engine* engine, auth::Authorizer* authorizer,
    std::shared_ptr<tls::TlsServerContext> tls) {
  absl::StatusOr<MysqlProtocolServer::Options> options = OptionsFromFlags();
  if (!options.ok()) return options.status();
  options->connection.authorizer = authorizer;
  if (tls != nullptr) {
    options->connection.tls = std::move(tls);
    options->connection.require_tls =
        absl::GetFlag(FLAGS_mysql_protocol_require_tls);
  }
  if (options->listen.empty()) return nullptr;
  const std::string listen = options->listen;
  absl::StatusOr<std::unique_ptr<MysqlProtocolServer>> server =
      MysqlProtocolServer::Start(*std::move(options), engine);
  if (!server.ok()) return server.status();
  std::fprintf(stderr, "msgqd mysql protocol on %s:%d\n",
               listen.substr(0, listen.rfind(':')).c_str(), (*server)->port());
  std::fflush(stderr);
  return server;
}

}  // namespace msgq::mysql_protocol
