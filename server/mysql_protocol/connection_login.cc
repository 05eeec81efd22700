// Connection's login (connection.h, "Phases" and "Identity"): the
// greeting, TLS on an SSLRequest, the password or bearer token, the host's
// per-principal limit, and the refusals of each step.
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/mysql_protocol/connection.h"
#include "server/mysql_protocol/handshake.h"

namespace msgq::mysql_protocol {

bool Connection::Authenticate() {
  unsigned char random[kScrambleBytes];
  if (RAND_bytes(random, sizeof(random)) != 1) return false;
  const std::string scramble = MakeScramble(
      absl::string_view(reinterpret_cast<const char*>(random), kScrambleBytes));
  uint8_t seq = 0;
  const bool offer_tls = options_.tls != nullptr;
  if (!Write(Frame(seq, HandshakePayload(id_, scramble,
                                         kServerCapabilities |
                                             (offer_tls ? kClientSsl : 0))))
           .ok()) {
    return false;
  }
  const absl::Time deadline = absl::Now() + options_.handshake_timeout;
  std::optional<Packet> packet = ReadLoginRequest(offer_tls, deadline);
  if (!packet.has_value()) return false;
  absl::StatusOr<HandshakeResponse> response =
      ParseHandshakeResponse(packet->payload);
  if (!response.ok()) {
    (void)Write(ErrPacket(
        uint8_t(packet->seq + 1), kErHandshake, "08S01",
        absl::StrCat("Bad handshake: ", response.status().message())));
    return false;
  }
  seq = uint8_t(packet->seq + 1);
  if (token_login()) return LoginWithToken(*response, seq, deadline);
  return LoginWithPassword(*response, scramble, seq, deadline);
}

std::optional<Packet> Connection::ReadLoginRequest(bool offer_tls,
                                                   absl::Time deadline) {
  absl::StatusOr<Packet> packet = ReadPacket(deadline, /*exact=*/offer_tls);
  if (!packet.ok()) {
    LoginFailed(packet.status());
    return std::nullopt;
  }
  if (IsSslRequest(packet->payload)) {
    if (!offer_tls) {
      (void)Write(ErrPacket(uint8_t(packet->seq + 1), kErHandshake, "08S01",
                            "Bad handshake: client asks for TLS; msgq's MySQL "
                            "protocol port does not offer it (no --tls_cert)"));
      return std::nullopt;
    }
    if (!StartTls(deadline)) return std::nullopt;
    packet = ReadPacket(deadline);
    if (!packet.ok()) {
      LoginFailed(packet.status());
      return std::nullopt;
    }
  } else if (offer_tls && options_.require_tls) {
    (void)Write(ErrPacket(
        uint8_t(packet->seq + 1), kErSecureTransportRequired, "HY000",
        "Connections using insecure transport are prohibited: this port "
        "requires TLS (--mysql_protocol_require_tls)"));
    return std::nullopt;
  }
  return *std::move(packet);
}

bool Connection::LoginWithPassword(const HandshakeResponse& response,
                                   const std::string& scramble, uint8_t seq,
                                   absl::Time deadline) {
  std::string auth = response.auth_response;
  if (!response.auth_plugin.empty() &&
      response.auth_plugin != kNativePassword) {
    if (!Write(Frame(seq, AuthSwitchPayload(scramble))).ok()) return false;
    absl::StatusOr<Packet> packet = ReadPacket(deadline);
    if (!packet.ok()) {
      LoginFailed(packet.status());
      return false;
    }
    auth = packet->payload;
    seq = uint8_t(packet->seq + 1);
  }
  const bool allowed =
      options_.user.empty()
          ? auth.empty()
          : response.user == options_.user &&
                CheckNativePassword(scramble, options_.password, auth);
  if (!allowed) {
    (void)Write(ErrPacket(
        seq, kErAccessDenied, "28000",
        absl::StrCat("Access denied for user '", response.user,
                     "' (using password: ", auth.empty() ? "NO" : "YES", ")")));
    host_->LogRefusal("access denied (1045)", Describe(response.user));
    return false;
  }
  return FinishLogin(response, seq, response.user);
}

bool Connection::FinishLogin(const HandshakeResponse& response, uint8_t seq,
                             std::string owner) {
  if (absl::Status s = host_->LoggedIn(id_, owner, token_login()); !s.ok()) {
    // Else the server is stopping: the socket is being shut down.
    if (s.code() != absl::StatusCode::kResourceExhausted) return false;
    (void)Write(
        ErrPacket(seq, kErTooManyUserConnections, "42000", s.message()));
    host_->LogRefusal(
        "too many connections of one principal "
        "(--mysql_protocol_max_connections_per_principal)",
        Describe(owner));
    return false;
  }
  owner_ = std::move(owner);
  session_.database = response.database;
  return Write(Frame(seq, OkPayload())).ok();
}

void Connection::LoginFailed(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
      (void)Write(
          PacketTooLargeErr(RefusedPacketSeq(), options_.max_query_bytes));
      host_->LogRefusal("login packet over --mysql_protocol_max_query_bytes",
                        Describe(""));
      break;
    case absl::StatusCode::kDeadlineExceeded:
      host_->LogRefusal(
          "login not finished in time (--mysql_protocol_handshake_timeout)",
          Describe(""));
      break;
    default:
      break;
  }
}

uint8_t Connection::RefusedPacketSeq() const {
  return in_.size() >= kHeaderBytes ? uint8_t(in_[3] + 1) : 1;
}

std::string Connection::Describe(absl::string_view user) const {
  // The user name is the client's: escaped and cut, so that it cannot
  // forge or flood log lines.
  return absl::StrCat("connection ", id_, user.empty() ? "" : " of '",
                      absl::CHexEscape(user.substr(0, 64)),
                      user.empty() ? "" : "'", " from ", peer_);
}

bool Connection::StartTls(absl::Time deadline) {
  // Bytes sent after the SSLRequest in the clear would pass for bytes from
  // inside TLS.
  if (!in_.empty()) return false;
  const int fd = fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return false;
  absl::StatusOr<std::unique_ptr<tls::TlsConnection>> connection =
      tls::TlsConnection::Accept(fd, options_.tls->Acquire(), deadline);
  if (!connection.ok()) {
    // One line per reason a minute: a client failing handshakes in a loop
    // must not fill the log.
    host_->LogRefusal(connection.status().message(), Describe(""));
    return false;
  }
  if (options_.tls->requires_client_certificate()) {
    peer_identities_ = (*connection)->PeerIdentities();
  }
  transport_ = std::make_unique<TlsTransport>(*std::move(connection));
  return true;
}

bool Connection::LoginWithToken(const HandshakeResponse& response, uint8_t seq,
                                absl::Time deadline) {
  const std::string denied =
      absl::StrCat("Access denied for user '", response.user, "'");
  if (!transport_->secure() && !IsLoopbackPeer(fd_)) {
    (void)Write(ErrPacket(
        seq, kErAccessDenied, "28000",
        absl::StrCat(denied,
                     ": a token is sent in clear text, so msgq takes it only "
                     "over TLS or from a loopback address")));
    return false;
  }
  std::string token;
  if (response.auth_plugin == kClearPassword) {
    token = ClearPassword(response.auth_response);
  } else {
    if (!Write(Frame(seq, ClearPasswordSwitchPayload())).ok()) return false;
    absl::StatusOr<Packet> packet = ReadPacket(deadline);
    if (!packet.ok()) {
      LoginFailed(packet.status());
      return false;
    }
    token = ClearPassword(packet->payload);
    OPENSSL_cleanse(packet->payload.data(), packet->payload.size());
    seq = uint8_t(packet->seq + 1);
  }
  std::string bearer = absl::StrCat("Bearer ", token);
  const bool given = !token.empty();
  absl::StatusOr<auth::Authorizer::Credential> credential =
      options_.authorizer->AuthenticateCredential(
          given ? std::optional<absl::string_view>(bearer) : std::nullopt,
          peer_identities_);
  OPENSSL_cleanse(token.data(), token.size());
  OPENSSL_cleanse(bearer.data(), bearer.size());
  // A valid token under another name is refused like a wrong one.
  if (!credential.ok() || credential->principal != response.user) {
    (void)Write(ErrPacket(
        seq, kErAccessDenied, "28000",
        absl::StrCat(denied, " (using password: ", given ? "YES" : "NO", ")")));
    host_->LogRefusal("access denied (1045)", Describe(response.user));
    return false;
  }
  credential_ = *std::move(credential);
  principal_ = credential_.principal;
  return FinishLogin(response, seq, principal_);
}

}  // namespace msgq::mysql_protocol
