// msgqd's security and limit flags: TLS (--tls_*), authentication and
// authorization (--auth_*), and the gRPC server's limits against hostile or
// broken clients (--grpc_*, --max_streams_per_principal).
//
// Not thread-safe: call from main before starting threads.
#ifndef MSGQ_SERVER_SECURITY_FLAGS_H_
#define MSGQ_SERVER_SECURITY_FLAGS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/authorizer.h"
#include "server/auth/server_tls.h"
#include "server/tls/tls_server_context.h"

namespace msgq {

struct SecurityConfig {
  auth::TlsFiles tls;
  absl::Duration tls_reload_interval;
  std::unique_ptr<auth::Authorizer> authorizer;
  // With TLS on: the one context of msgqd's own OpenSSL sockets (the
  // MySQL-protocol port), from the same files, re-read every
  // tls_reload_interval; null without TLS. The HTTP port reads the same
  // files() into GnuTLS (server/http/gnutls_credentials.h).
  std::shared_ptr<tls::TlsServerContext> own_tls;
};

// Reads and checks the flags and files. INVALID_ARGUMENT naming the flag,
// or FILE:LINE of a token or policy file that does not parse;
// FAILED_PRECONDITION naming the file and its mode when group or others
// may write the token or policy file or read the TLS key.
absl::StatusOr<SecurityConfig> SecurityFromFlags();

// The credentials of the gRPC port: TLS watching the files, or insecure.
std::shared_ptr<grpc::ServerCredentials> GrpcServerCredentials(
    const SecurityConfig& config);

// Sets the server's limits from the --grpc_* flags: max receive message
// size, max concurrent streams per connection, keepalive ping enforcement,
// the server's own keepalive (--grpc_keepalive_time/_timeout: a client
// whose network died silently has its streams cancelled within about their
// sum), the handshake deadline, the idle deadline of a connection without
// calls, a memory quota (which also bounds the connections: gRPC 1.51
// has no connection count limit) and the thread cap of the synchronous
// server (--grpc_max_sync_threads; reflection's streams hold one each).
void ApplyServerLimits(grpc::ServerBuilder* builder);

// Logs what is configured and warns once when a listening address is not
// loopback and access is open (no authentication or no policy).
void LogSecurity(const SecurityConfig& config, const std::string& listen,
                 const std::string& http_listen);

}  // namespace msgq

#endif  // MSGQ_SERVER_SECURITY_FLAGS_H_
