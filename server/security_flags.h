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
#include "server/grpc_front/grpc_front.h"
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

// Sets the server's limits from the --grpc_* flags: max receive message
// size, max concurrent streams per connection, keepalive ping enforcement,
// the server's own keepalive (--grpc_keepalive_time/_timeout: a client
// whose network died silently has its streams cancelled within about their
// sum), the handshake deadline, the idle deadline of a connection without
// calls, a memory quota and the thread cap of the synchronous
// server (--grpc_max_sync_threads; reflection's streams hold one each).
void ApplyServerLimits(grpc::ServerBuilder* builder);

// The gRPC front's options (server/grpc_front/grpc_front.h) from the
// --grpc_max_connections, --grpc_max_stream_resets,
// --grpc_stream_resets_per_second and --grpc_handshake_timeout flags
// (after SecurityFromFlags checked them).
grpc_front::GrpcFront::Options GrpcFrontOptions(const std::string& listen,
                                                tls::TlsServerContext* tls);

// Logs what is configured and warns once when a listening address is not
// loopback and access is open (no authentication or no policy).
void LogSecurity(const SecurityConfig& config, const std::string& listen,
                 const std::string& http_listen);

}  // namespace msgq

#endif  // MSGQ_SERVER_SECURITY_FLAGS_H_
