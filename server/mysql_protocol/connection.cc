#include "server/mysql_protocol/connection.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/poll_timeout.h"
#include "engine/log.h"
#include "server/auth/table_access.h"
#include "server/mysql_protocol/handshake.h"
#include "server/mysql_protocol/result_set.h"
#include "server/mysql_protocol/row_sink.h"

namespace msgq::mysql_protocol {
namespace {

// The ERR packet for an engine error on `keyspace`.`table`.
std::string EngineErr(uint8_t seq, const absl::Status& status,
                      const std::string& keyspace, const std::string& table) {
  if (status.code() == absl::StatusCode::kNotFound) {
    return ErrPacket(
        seq, kErNoSuchTable, "42S02",
        absl::StrCat("Table '", keyspace.empty() ? "" : keyspace + ".", table,
                     "' doesn't exist (", status.message(), ")"));
  }
  // UNAVAILABLE (table changed or dropped, msgqd stopping, MySQL away):
  // the client may subscribe again; like every other error, 1105.
  return ErrPacket(seq, kErUnknown, "HY000",
                   absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                                status.message()));
}

// One of a principal's --max_streams_per_principal slots, for a stream's
// lifetime.
class StreamSlot {
 public:
  StreamSlot(auth::Authorizer* authorizer, std::string principal)
      : authorizer_(authorizer), principal_(std::move(principal)) {}
  ~StreamSlot() { authorizer_->ReleaseStream(principal_); }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;

 private:
  auth::Authorizer* const authorizer_;
  const std::string principal_;
};

}  // namespace

Connection::Connection(int fd, uint32_t id, std::string peer,
                       const ConnectionOptions& options, Engine* engine,
                       ConnectionHost* host)
    : fd_(fd),
      id_(id),
      peer_(std::move(peer)),
      options_(options),
      engine_(engine),
      host_(host),
      interrupt_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      transport_(std::make_unique<PlainTransport>(fd)) {}

Connection::~Connection() {
  if (interrupt_fd_ >= 0) close(interrupt_fd_);
}

void Connection::Interrupt() {
  const uint64_t one = 1;
  if (interrupt_fd_ >= 0) (void)!write(interrupt_fd_, &one, sizeof(one));
}

absl::Status Connection::Write(absl::string_view bytes) {
  return transport_->Write(bytes);
}

absl::Status Connection::Receive(absl::Time deadline, size_t max) {
  return transport_->Read(in_, deadline, max);
}

absl::StatusOr<Packet> Connection::ReadPacket(absl::Time deadline, bool exact) {
  while (true) {
    size_t consumed = 0;
    absl::StatusOr<std::optional<Packet>> parsed = ParsePacket(
        in_, MaxCommandPayload(options_.max_query_bytes), &consumed);
    if (!parsed.ok()) return parsed.status();
    if (parsed->has_value()) {
      in_.erase(0, consumed);
      return **std::move(parsed);
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready =
        transport_->Buffered() ? 1 : poll(&p, 1, PollTimeoutMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return absl::DeadlineExceededError("no packet in time");
    if (ready < 0) return absl::UnavailableError(strerror(errno));
    // A packet over the cap is refused from its header: read no more than
    // one packet of the cap at a time.
    size_t max = kHeaderBytes + MaxCommandPayload(options_.max_query_bytes);
    if (exact) {
      // The header, then the rest of the payload it announces.
      max = in_.size() < 4 ? 4 - in_.size()
                           : 4 +
                                 (uint8_t(in_[0]) | uint8_t(in_[1]) << 8 |
                                  uint32_t(uint8_t(in_[2])) << 16) -
                                 in_.size();
    }
    if (absl::Status s = Receive(deadline, max); !s.ok()) return s;
  }
}

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
  absl::StatusOr<Packet> packet = ReadPacket(deadline, /*exact=*/offer_tls);
  if (!packet.ok()) {
    LoginFailed(packet.status());
    return false;
  }
  if (IsSslRequest(packet->payload)) {
    if (!offer_tls) {
      (void)Write(ErrPacket(uint8_t(packet->seq + 1), kErHandshake, "08S01",
                            "Bad handshake: client asks for TLS; msgq's MySQL "
                            "protocol port does not offer it (no --tls_cert)"));
      return false;
    }
    if (!StartTls(deadline)) return false;
    packet = ReadPacket(deadline);
    if (!packet.ok()) {
      LoginFailed(packet.status());
      return false;
    }
  } else if (offer_tls && options_.require_tls) {
    (void)Write(ErrPacket(
        uint8_t(packet->seq + 1), kErSecureTransportRequired, "HY000",
        "Connections using insecure transport are prohibited: this port "
        "requires TLS (--mysql_protocol_require_tls)"));
    return false;
  }
  absl::StatusOr<HandshakeResponse> response =
      ParseHandshakeResponse(packet->payload);
  if (!response.ok()) {
    (void)Write(ErrPacket(
        uint8_t(packet->seq + 1), kErHandshake, "08S01",
        absl::StrCat("Bad handshake: ", response.status().message())));
    return false;
  }
  std::string auth = response->auth_response;
  seq = uint8_t(packet->seq + 1);
  if (token_login()) return LoginWithToken(*response, seq, deadline);
  if (!response->auth_plugin.empty() &&
      response->auth_plugin != kNativePassword) {
    if (!Write(Frame(seq, AuthSwitchPayload(scramble))).ok()) return false;
    packet = ReadPacket(deadline);
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
          : response->user == options_.user &&
                CheckNativePassword(scramble, options_.password, auth);
  if (!allowed) {
    (void)Write(ErrPacket(
        seq, kErAccessDenied, "28000",
        absl::StrCat("Access denied for user '", response->user,
                     "' (using password: ", auth.empty() ? "NO" : "YES", ")")));
    host_->LogRefusal("access denied (1045)", Describe(response->user));
    return false;
  }
  return FinishLogin(*response, seq, response->user);
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
  absl::StatusOr<std::string> principal = options_.authorizer->Authenticate(
      given ? std::optional<absl::string_view>(bearer) : std::nullopt,
      peer_identities_);
  OPENSSL_cleanse(token.data(), token.size());
  OPENSSL_cleanse(bearer.data(), bearer.size());
  // A valid token under another name is refused like a wrong one.
  if (!principal.ok() || *principal != response.user) {
    (void)Write(ErrPacket(
        seq, kErAccessDenied, "28000",
        absl::StrCat(denied, " (using password: ", given ? "YES" : "NO", ")")));
    host_->LogRefusal("access denied (1045)", Describe(response.user));
    return false;
  }
  principal_ = *std::move(principal);
  return FinishLogin(response, seq, principal_);
}

void Connection::Run() {
  if (!Authenticate()) return;
  while (true) {
    absl::StatusOr<Packet> packet =
        ReadPacket(absl::Now() + options_.idle_timeout);
    if (!packet.ok()) {
      if (packet.status().code() == absl::StatusCode::kResourceExhausted) {
        (void)Write(
            PacketTooLargeErr(RefusedPacketSeq(), options_.max_query_bytes));
        host_->LogRefusal("statement over --mysql_protocol_max_query_bytes",
                          Describe(owner_));
      } else if (packet.status().code() ==
                 absl::StatusCode::kDeadlineExceeded) {
        // As MySQL 8 after wait_timeout: an ERR the client reads with its
        // next command, sequence id 0 (the server starts the exchange).
        (void)Write(
            ErrPacket(0, kErClientInteractionTimeout, "HY000",
                      "The client was disconnected by the server because of "
                      "inactivity (--mysql_protocol_idle_timeout)"));
        host_->LogRefusal(
            "idle connection closed (--mysql_protocol_idle_timeout)",
            Describe(owner_));
      }
      return;
    }
    CommandResult result = DispatchCommand(session_, *packet);
    if (!result.reply.empty() && !Write(result.reply).ok()) return;
    switch (result.action) {
      case CommandResult::Action::kReply:
        break;
      case CommandResult::Action::kClose:
        return;
      case CommandResult::Action::kKill: {
        uint8_t seq = 1;
        const std::string reply =
            Kill(result.kill_id, result.kill_connection).ok()
                ? Frame(seq, OkPayload())
                : ErrPacket(
                      seq, kErNoSuchThread, "HY000",
                      absl::StrCat("Unknown thread id: ", result.kill_id));
        if (!Write(reply).ok()) return;
        break;
      }
      case CommandResult::Action::kStream:
        if (!Stream(result.keyspace, result.table)) return;
        break;
    }
  }
}

absl::Status Connection::Kill(uint32_t target, bool connection) {
  // CONNECTION_ADMIN: `admin` on every table, as a grant on */* gives.
  const bool admin =
      token_login() &&
      options_.authorizer->Authorize(principal_, auth::Action::kAdmin, "*", "*")
          .ok();
  return host_->Kill(id_, target, connection, admin);
}

bool Connection::Stream(const std::string& keyspace, const std::string& table) {
  uint8_t seq = 1;
  // Authorized before the table is looked up: a caller without the grant
  // gets this same answer whether the table exists, failed to load or
  // was never there.
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      auth::FindForCaller(*engine_, options_.authorizer, principal_,
                          auth::Action::kStream, keyspace, table);
  if (!manager.ok()) {
    if (manager.status().code() == absl::StatusCode::kPermissionDenied) {
      // Names the action and the table as the client wrote it, never the
      // policy.
      return Write(
                 ErrPacket(seq, kErTableAccessDenied, "42000",
                           absl::StrCat("STREAM command denied to user '",
                                        principal_, "' for table '",
                                        keyspace.empty() ? "" : keyspace + ".",
                                        table, "'")))
          .ok();
    }
    return Write(EngineErr(seq, manager.status(), keyspace, table)).ok();
  }
  const MessageTable& t = (*manager)->table();
  std::optional<StreamSlot> slot;
  if (auth::Authorizer* a = options_.authorizer; a != nullptr) {
    if (absl::Status s = a->AcquireStream(principal_); !s.ok()) {
      return Write(ErrPacket(seq, kErUserLimitReached, "42000", s.message()))
          .ok();
    }
    slot.emplace(a, principal_);
  }
  absl::StatusOr<std::shared_ptr<RowSink>> created = RowSink::Create(*manager);
  if (!created.ok()) {
    return Write(EngineErr(seq, created.status(), keyspace, table)).ok();
  }
  const std::shared_ptr<RowSink> sink = *std::move(created);
  std::vector<ColumnDefinition> columns;
  for (const Column& c : t.streamed) {
    columns.push_back(DefinitionOf(t.keyspace, t.name, c));
  }
  if (!Write(StreamHeader(seq, columns)).ok()) return false;
  if (absl::Status s = (*manager)->Subscribe(sink); !s.ok()) {
    sink->Finish();
    return Write(EngineErr(seq, s, keyspace, table)).ok();
  }
  MessageManager& m = sink->manager();
  uint64_t stale = 0;  // a KILL QUERY from before this stream
  if (interrupt_fd_ >= 0) (void)!read(interrupt_fd_, &stale, sizeof(stale));
  while (true) {
    pollfd fds[3] = {{fd_, POLLIN, 0},
                     {sink->wake_fd(), POLLIN, 0},
                     {interrupt_fd_, POLLIN, 0}};
    // TLS may hold bytes of the client already: it sent something.
    const int ready = transport_->Buffered() ? 1 : poll(fds, 3, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || transport_->Buffered() ||
        (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      // The client left, or sent something (a COM_QUIT; nothing else is
      // valid while a result set is being read): end the stream.
      sink->Finish();
      return false;
    }
    if (fds[2].revents & POLLIN) {
      sink->Finish();
      return Write(ErrPacket(seq, kErQueryInterrupted, "70100",
                             "Query execution was interrupted"))
          .ok();
    }
    if ((fds[1].revents & POLLIN) == 0) continue;
    RowSink::Ready taken = sink->TakeReady();
    bool failed = false;
    for (MessageBatch& batch : taken.batches) {
      if (failed) {
        m.OnSendFailed(sink.get(), std::move(batch));
        continue;
      }
      std::string bytes;
      for (const Message& message : batch) {
        if (message.row != nullptr) {
          bytes += Frame(seq, PackedRowPayload(*message.row));
        }
      }
      if (Write(bytes).ok()) {
        m.OnSendDone(sink.get());
      } else {
        failed = true;
        sink->Finish();
        m.OnSendFailed(sink.get(), std::move(batch));
      }
    }
    if (failed) return false;
    if (taken.closed.has_value()) {
      sink->Finish();
      return Write(EngineErr(seq, *taken.closed, keyspace, table)).ok();
    }
  }
}

}  // namespace msgq::mysql_protocol
