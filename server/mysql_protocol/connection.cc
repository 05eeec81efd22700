// Connection (connection.h): its socket I/O and the command loop. The
// login is in connection_login.cc, `stream * from T` in
// connection_stream.cc.
#include "server/mysql_protocol/connection.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/poll_timeout.h"

namespace msgq::mysql_protocol {

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
    if (options_.authorizer != nullptr) {
      if (absl::Status s = options_.authorizer->StillAuthenticates(credential_);
          !s.ok()) {
        (void)Write(ErrPacket(1, kErAccessDenied, "28000", s.message()));
        host_->LogRefusal("credentials revoked (1045)", Describe(owner_));
        return;
      }
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
        if (!Stream(result.keyspace, result.table, result.group)) return;
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

}  // namespace msgq::mysql_protocol
