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
// and the user name must be that principal (else ERR 1045). With a client
// CA, a verified client certificate's identity is a principal too, by the
// gRPC port's rule (tls::TlsConnection::PeerIdentities: the first
// subjectAltName, else the common name). `stream * from T` then needs the
// policy's `stream` action on T, checked at each statement before the
// table is looked up (auth::FindForCaller), like a gRPC MessageStream:
// ERR 1142 when denied, the same answer whether T exists or not; ERR 1226
// over --max_streams_per_principal; the connection stays usable. Without
// one: ConnectionOptions::user/password, or anyone on loopback. For
// `stream * from T` it subscribes a RowSink to the table's manager exactly
// like a gRPC MessageStream (same round-robin and backoff, counted among
// the table's subscribers; with `group G`, to group G's feed, as a gRPC
// MessageStream with `group`), sends the column definitions of the streamed
// columns, then one text row per message as they come. The stream ends
// when the client disconnects or sends anything (unsubscribe: messages not
// written go to the other subscribers at once, written unacked ones come
// back after their ack wait), or when the engine closes it (ERR packet,
// the connection goes back to reading commands).
//
// Revocation: when a reload of the tokens file drops the token a
// connection logged in with, its open stream ends with ERR 1045 and its
// next command gets ERR 1045 "credentials revoked" and a close; when the
// policy no longer lets it stream the table, the stream ends with ERR 1142
// (server/auth/stream_revocation.h).
//
// Owner: each logged-in connection belongs to its principal (token or
// certificate logins) or else to the user name it gave. KILL QUERY n (from
// another connection, as the mariadb client sends on Ctrl-C) ends
// connection n's stream with ERR 1317 and it reads commands again; KILL
// [CONNECTION] n closes it. Only a connection of the caller's owner may be
// killed, unless the caller has `admin` on every table (a policy grant on
// `*/*`; MySQL's CONNECTION_ADMIN); another owner's connection gets ERR
// 1094 "Unknown thread id: n", the answer for an id that does not exist
// (MySQL answers 1095 "You are not owner of thread n"; msgq does not tell
// which ids are in use).
//
// Limits (ConnectionOptions): the login, TLS handshake included, within
// handshake_timeout (then closed); a logged-in connection that sends no
// command for idle_timeout while not streaming gets ERR 4031 "The client
// was disconnected by the server because of inactivity" and is closed (a
// stream is not idle: its rows are the activity); a command packet over
// MaxCommandPayload(max_query_bytes) gets ERR 1153 from its header, before
// it is read, and a close (command.h). The per-principal connection limit
// is the host's (ConnectionHost::LoggedIn: ERR 1203 and a close).
// Refusals and failed TLS handshakes go to ConnectionHost::LogRefusal.
//
// No lock is held across socket I/O; writes block (that is the back
// pressure: a client that does not read holds at most the manager's
// max_batches_per_subscriber batches).
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_CONNECTION_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "engine/queue/message.h"
#include "server/auth/authorizer.h"
#include "server/mysql_protocol/command.h"
#include "server/mysql_protocol/handshake.h"
#include "server/mysql_protocol/packet.h"
#include "server/mysql_protocol/transport.h"
#include "server/tls/tls_server_context.h"

namespace msgq::mysql_protocol {

class RowSink;

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
  // certificate's identities (see Identity above) go to the Authorizer.
  std::shared_ptr<tls::TlsServerContext> tls;
  // With `tls`: a client that does not ask for TLS gets ERR 3159.
  bool require_tls = true;
  // From the greeting to the OK of the login, TLS handshake included.
  absl::Duration handshake_timeout = absl::Seconds(10);
  // Logged in, not streaming, no command: ERR 4031 and a close.
  absl::Duration idle_timeout = absl::Minutes(10);
  // Longest statement (COM_QUERY) read; every packet, the login's
  // included, is limited to MaxCommandPayload of it. Longer: ERR 1153 and
  // a close.
  size_t max_query_bytes = kDefaultMaxQueryBytes;
};

// What a Connection needs of the server that runs it (MysqlProtocolServer).
// Called from the connection's thread; implementations are thread-safe.
class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;
  // Connection `id` logged in as `owner` (see Owner above). `limited`: it
  // counts against the per-principal connection limit (token and
  // certificate logins). RESOURCE_EXHAUSTED with MySQL's ERR 1203 text
  // when `owner` already has the limit: the connection answers ERR 1203
  // and closes; UNAVAILABLE when the server is stopping (closes too).
  virtual absl::Status LoggedIn(uint32_t id, const std::string& owner,
                                bool limited) = 0;
  // KILL [QUERY|CONNECTION] `target` from connection `caller`: ends its
  // stream (QUERY) or closes it (`connection`). Only a connection of the
  // caller's owner unless `admin`. NOT_FOUND alike for no such connection
  // and for one the caller may not kill.
  virtual absl::Status Kill(uint32_t caller, uint32_t target, bool connection,
                            bool admin) = 0;
  // Logs a refused client: at most once a minute per `reason` (the
  // repeats are counted), with the `detail` of the one logged.
  virtual void LogRefusal(absl::string_view reason,
                          absl::string_view detail) = 0;
};

class Connection {
 public:
  // Does not own `fd` (the server closes it after Run returns). `peer`:
  // the client's address, for logs. `host` must outlive the connection.
  Connection(int fd, uint32_t id, std::string peer,
             const ConnectionOptions& options, Engine* engine,
             ConnectionHost* host);
  ~Connection();

  void Run();
  // Ends the stream under way, if any (KILL QUERY). Thread-safe, never
  // blocks.
  void Interrupt();

 private:
  // Handshake and authentication; false: the connection is to be closed
  // (an ERR packet was sent when the protocol allows one).
  bool Authenticate();
  // The greeting's answer: the HandshakeResponse packet, read inside TLS
  // after an SSLRequest. nullopt: close (ERR 1043 for an SSLRequest
  // without `offer_tls`, ERR 3159 when TLS is required and not asked for,
  // or as LoginFailed).
  std::optional<Packet> ReadLoginRequest(bool offer_tls, absl::Time deadline);
  // The rest of the login without token login: mysql_native_password
  // (switched to when the client offers another plugin) against
  // ConnectionOptions::user/password. False: close (ERR 1045 when denied).
  bool LoginWithPassword(const HandshakeResponse& response,
                         const std::string& scramble, uint8_t seq,
                         absl::Time deadline);
  // The rest of the login when the Authorizer requires credentials: the
  // bearer token as a clear-text password (see above). `seq`: of the next
  // packet to send.
  bool LoginWithToken(const HandshakeResponse& response, uint8_t seq,
                      absl::Time deadline);
  // The end of a successful login: the host's limit, then the OK packet
  // (or ERR 1203). False: close.
  bool FinishLogin(const HandshakeResponse& response, uint8_t seq,
                   std::string owner);
  // After a failed read in the login: ERR 1153 for a packet too large, and
  // the refusal logged (not for a client that just left).
  void LoginFailed(const absl::Status& status);
  // The sequence id of the answer to the packet ReadPacket refused as too
  // large (its header is still at the front of in_).
  uint8_t RefusedPacketSeq() const;
  // "connection ID [of 'USER'] from PEER", for logs.
  std::string Describe(absl::string_view user) const;
  // Answers KILL `target` (see Owner above).
  absl::Status Kill(uint32_t target, bool connection);
  // After an SSLRequest: the TLS handshake on a dup of the socket; from
  // then on transport_ is TLS. False: close the connection.
  bool StartTls(absl::Time deadline);
  bool token_login() const {
    return options_.authorizer != nullptr && options_.authorizer->required();
  }
  // Streams `table`'s default group, or consumer group `group`, until the
  // client leaves (false) or the engine ends the stream (true: read the
  // next command). Refusals before the stream starts (ERR 1142, 1226,
  // 1146, 1105: an unknown group is 1105 "NOT_FOUND: " and gRPC's text)
  // leave the connection usable (true unless the write failed).
  bool Stream(const std::string& keyspace, const std::string& table,
              const std::string& group);
  // The subscribed stream's loop (after its column definitions; `seq`:
  // of the next packet): rows as they come until the client leaves or
  // sends anything (false), a KILL QUERY (ERR 1317) or the engine's close
  // (its ERR; `of_group`: a consumer group's stream, whose NOT_FOUND is
  // the group's deletion, 1105). Ends `sink`.
  bool StreamRows(RowSink& sink, uint8_t seq, const std::string& keyspace,
                  const std::string& table, bool of_group);
  // Writes `batches` as rows (from packet `seq` on, advanced past them) and
  // reports each to the sink's source; after a failed write the rest are handed
  // back and the sink ended (false).
  bool WriteBatches(RowSink& sink, uint8_t& seq,
                    std::deque<MessageBatch>& batches);

  absl::Status Write(absl::string_view bytes);
  // One packet; UNAVAILABLE when the peer closed or the socket failed,
  // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (over MaxCommandPayload).
  // `exact`: reads no byte past the packet (what follows an SSLRequest is
  // the TLS ClientHello, for OpenSSL to read from the socket).
  absl::StatusOr<Packet> ReadPacket(absl::Time deadline, bool exact = false);
  // Reads what arrived into in_; UNAVAILABLE on EOF or error.
  absl::Status Receive(absl::Time deadline, size_t max);

  const int fd_;
  const uint32_t id_;
  const std::string peer_;
  const ConnectionOptions& options_;
  Engine* const engine_;
  ConnectionHost* const host_;
  const int interrupt_fd_;  // eventfd; -1 if none could be made
  std::unique_ptr<Transport> transport_;
  Session session_;
  std::string principal_;  // "" without token login
  // How the principal logged in: rechecked before every command and by the
  // watch of an open stream (server/auth/stream_revocation.h).
  auth::Authorizer::Credential credential_;
  std::string owner_;                         // once logged in
  std::vector<std::string> peer_identities_;  // verified client certificate
  std::string in_;                            // bytes read, not yet parsed
};

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_CONNECTION_H_
