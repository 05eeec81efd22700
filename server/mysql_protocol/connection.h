// Connection: one client of msgq's MySQL-protocol port, served on a thread
// of its own (Run blocks until the client leaves or the socket is shut
// down by MysqlProtocolServer::Stop).
//
// Phases: the handshake (HandshakeV10, mysql_native_password, an
// AuthSwitchRequest for clients that offer another plugin; with TLS
// configured an SSLRequest, the TLS handshake, and the rest inside TLS;
// ERR 3159 for a client without TLS when TLS is required), bounded by
// Options::handshake_timeout as a whole; then commands (command.h).
//
// Identity: with an Authorizer that requires credentials (msgqd's
// --auth_tokens_file), the client's password is a bearer token of the
// token file: the server switches the client to mysql_clear_password (only
// over TLS or from a loopback peer; otherwise ERR 1045 before the token is
// sent), the Authorizer finds its principal (constant time, never logged),
// and the user name must be that principal (else ERR 1045). `stream * from
// T` then needs the policy's `stream` action on T, checked at each
// statement like a gRPC MessageStream (ERR 1142 when denied, ERR 1226 over
// --max_streams_per_principal; the connection stays usable). Without one:
// ConnectionOptions::user/password, or anyone on loopback. For
// `stream * from T` it subscribes a RowSink to the table's manager exactly
// like a gRPC MessageStream (same round-robin and backoff, counted among
// the table's subscribers), sends the column definitions of the streamed
// columns, then one text row per message as they come. The stream ends
// when the client disconnects or sends anything (unsubscribe: messages not
// written go to the other subscribers at once, written unacked ones come
// back after their ack wait), or when the engine closes it (ERR packet,
// the connection goes back to reading commands).
//
// KILL QUERY n (from another connection, as the mariadb client sends on
// Ctrl-C) ends connection n's stream with ERR 1317 and it reads commands
// again; KILL [CONNECTION] n closes it.
//
// No lock is held across socket I/O; writes block (that is the back
// pressure: a client that does not read holds at most the manager's
// max_batches_per_subscriber batches).
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_CONNECTION_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "server/auth/authorizer.h"
#include "server/mysql_protocol/command.h"
#include "server/mysql_protocol/handshake.h"
#include "server/mysql_protocol/packet.h"
#include "server/mysql_protocol/transport.h"
#include "server/tls/tls_server_context.h"

namespace msgq::mysql_protocol {

struct ConnectionOptions {
  // Empty: any user name with an empty password (the server allows that
  // only on a loopback listen address).
  std::string user;
  std::string password;
  // Not owned; may be null. When it requires credentials, clients log in
  // with its bearer tokens (user and password above must be empty) and
  // its policy applies; otherwise only its stream limit does.
  auth::Authorizer* authorizer = nullptr;
  // Non-null: CLIENT_SSL is offered and an SSLRequest gets a TLS handshake
  // with it; the login continues inside TLS. With a client CA the client
  // certificate's common name is an identity for the Authorizer.
  std::shared_ptr<tls::TlsServerContext> tls;
  // With `tls`: a client that does not ask for TLS gets ERR 3159.
  bool require_tls = true;
  absl::Duration handshake_timeout = absl::Seconds(10);
  // Largest command packet read; larger ones get ERR 1153 and a close.
  size_t max_packet = 1 << 20;
};

class Connection {
 public:
  // Kills connection `id` (its stream only, unless `connection`); false
  // when there is no such connection.
  using KillFunction = std::function<bool(uint32_t id, bool connection)>;

  // Does not own `fd` (the server closes it after Run returns).
  Connection(int fd, uint32_t id, const ConnectionOptions& options,
             Engine* engine, KillFunction kill);
  ~Connection();

  void Run();
  // Ends the stream under way, if any (KILL QUERY). Thread-safe, never
  // blocks.
  void Interrupt();

 private:
  // Handshake and authentication; false: the connection is to be closed
  // (an ERR packet was sent when the protocol allows one).
  bool Authenticate();
  // The rest of the login when the Authorizer requires credentials: the
  // bearer token as a clear-text password (see above). `seq`: of the next
  // packet to send.
  bool LoginWithToken(const HandshakeResponse& response, uint8_t seq,
                      absl::Time deadline);
  // After an SSLRequest: the TLS handshake on a dup of the socket; from
  // then on transport_ is TLS. False: close the connection.
  bool StartTls(absl::Time deadline);
  bool token_login() const {
    return options_.authorizer != nullptr && options_.authorizer->required();
  }
  // Streams until the client leaves (false) or the engine ends the stream
  // (true: read the next command).
  bool Stream(const std::string& keyspace, const std::string& table);

  absl::Status Write(absl::string_view bytes);
  // One packet; UNAVAILABLE when the peer closed or the socket failed,
  // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (too large, see ParsePacket).
  // `exact`: reads no byte past the packet (what follows an SSLRequest is
  // the TLS ClientHello, for OpenSSL to read from the socket).
  absl::StatusOr<Packet> ReadPacket(absl::Time deadline, bool exact = false);
  // Reads what arrived into in_; UNAVAILABLE on EOF or error.
  absl::Status Receive(absl::Time deadline, size_t max);

  const int fd_;
  const uint32_t id_;
  const ConnectionOptions& options_;
  Engine* const engine_;
  const KillFunction kill_;
  const int interrupt_fd_;  // eventfd; -1 if none could be made
  std::unique_ptr<Transport> transport_;
  Session session_;
  std::string principal_;                     // "" without token login
  std::vector<std::string> peer_identities_;  // verified client certificate
  std::string in_;                            // bytes read, not yet parsed
};

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_CONNECTION_H_
