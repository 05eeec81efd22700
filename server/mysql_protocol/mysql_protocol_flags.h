// msgqd's --mysql_protocol_* flags: the MySQL-protocol port where clients
// receive messages with `stream * from TABLE` (server.h).
//
// Identity: with msgqd's --auth_tokens_file (an Authorizer that requires
// credentials), the gRPC bearer tokens: the token is the password, its
// principal the user name, and the --auth_policy_file's `stream` action is
// checked per statement (connection.h); --mysql_protocol_user is then an
// error. Otherwise --mysql_protocol_user with --mysql_protocol_password_file
// (the file's first line; there is no password flag, so it never shows in
// `ps`); without a user, any user name with an empty password is let in,
// and only on a loopback listen address.
//
// TLS: with --tls_cert/--tls_key (the gRPC port's files, re-read like
// them) the port offers TLS, and with --mysql_protocol_require_tls (the
// default) requires it; --tls_client_ca makes a client certificate's
// identity a principal, by the gRPC port's rule (its first subjectAltName,
// else its common name: server/auth/grpc_auth.h).
//
// Budgets (server.h, connection.h), each refusal logged at most once a
// minute per reason:
//   --mysql_protocol_max_connections (64)            all clients; ERR 1040
//   --mysql_protocol_max_connections_per_principal (16)
//                              logged-in connections of one principal
//                              (token/certificate logins); ERR 1203
//   --mysql_protocol_max_handshakes_per_address (16) not logged in yet,
//                              per client address; ERR 1040
//   --mysql_protocol_handshake_timeout (10s)   the login, TLS included;
//                              then closed
//   --mysql_protocol_idle_timeout (10m)  logged in, not streaming, no
//                              command; ERR 4031 and closed
//   --mysql_protocol_max_query_bytes (16384)   one statement (and login
//                              packet); ERR 1153 from its header, closed
//
// Not thread-safe: call from main.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_MYSQL_PROTOCOL_FLAGS_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_MYSQL_PROTOCOL_FLAGS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/auth/authorizer.h"
#include "server/mysql_protocol/server.h"
#include "server/tls/tls_server_context.h"

namespace msgq::mysql_protocol {

// The options the flags describe. INVALID_ARGUMENT naming the flag: a
// password file without a user or a user without one, an unreadable or
// empty password file, max connections < 1, a per-principal or
// per-address limit < 0, a timeout <= 0, max query bytes below 1024 or
// from 16 MiB.
absl::StatusOr<MysqlProtocolServer::Options> OptionsFromFlags();

// Starts the port the flags describe and prints "msgqd mysql protocol on
// HOST:PORT" to stderr; null (and OK) when --mysql_protocol_listen is
// empty. Errors: those of OptionsFromFlags and MysqlProtocolServer::Start
// (INVALID_ARGUMENT: msgqd exits 2; UNAVAILABLE when the address cannot be
// bound: msgqd exits 1).
// `authorizer` (not owned, may be null) must outlive the server; `tls`
// (null: no TLS) is msgqd's context of its own TLS sockets
// (SecurityConfig::own_tls).
absl::StatusOr<std::unique_ptr<MysqlProtocolServer>> StartFromFlags(
    Engine* engine, auth::Authorizer* authorizer,
    std::shared_ptr<tls::TlsServerContext> tls);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_MYSQL_PROTOCOL_FLAGS_H_
