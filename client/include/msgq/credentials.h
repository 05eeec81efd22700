// ChannelSecurity: how a client reaches a msgqd that requires TLS, client
// certificates (mTLS) or bearer tokens (see the server's --tls_* and
// --auth_* flags), and the channels built from it.
//
// The token travels as the metadata `authorization: Bearer <token>` on
// every call, added by a client interceptor, so it works over plaintext
// too (keep plaintext to loopback: the token crosses the wire in clear).
//
// Example:
//   ChannelSecurity security{.tls_ca_file = "/etc/msgq/ca.pem"};
//   security.token = *ReadTokenFile("/etc/msgq/token");
//   absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
//       NewSecureChannel("msgq.internal:15999", security);
//   Client client(*channel);
//
// Thread-safety: plain data and free functions; the channels are
// thread-safe.
#ifndef MSGQ_CREDENTIALS_H_
#define MSGQ_CREDENTIALS_H_

#include <grpcpp/channel.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "msgq/subscriber_options.h"

namespace msgq {

struct ChannelSecurity {
  // PEM CA bundle that signed the server's certificate; non-empty turns
  // TLS on (the server's name or IP must be in its certificate).
  std::string tls_ca_file;
  // PEM client certificate and key for mTLS (both or neither; needs TLS).
  std::string tls_cert_file;
  std::string tls_key_file;
  // The name checked in the server's certificate (and sent as SNI) instead
  // of the target's host, e.g. to dial 127.0.0.1 with a certificate for
  // msgq.internal; empty: the target's host. Needs TLS.
  std::string tls_server_name;
  // Bearer token; empty sends none.
  std::string token;

  bool empty() const {
    return tls_ca_file.empty() && tls_cert_file.empty() &&
           tls_key_file.empty() && tls_server_name.empty() && token.empty();
  }
};

// The token in `path`: its first line without surrounding whitespace.
// INVALID_ARGUMENT when it cannot be read or is empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// A channel to `target` as NewChannel (client.h) makes, with `security`.
// INVALID_ARGUMENT when a file cannot be read, a client certificate comes
// without its key (or the other way round) or without TLS, or a server
// name without TLS. Connects
// lazily: a refused handshake shows as UNAVAILABLE on the first call.
absl::StatusOr<std::shared_ptr<grpc::Channel>> NewSecureChannel(
    absl::string_view target, const ChannelSecurity& security);

// A ServerChannel per target over NewSecureChannel (as ChannelsTo in
// subscriber_options.h does without security).
absl::StatusOr<std::vector<ServerChannel>> SecureChannelsTo(
    const std::vector<std::string>& targets, const ChannelSecurity& security);

}  // namespace msgq

#endif  // MSGQ_CREDENTIALS_H_
